"""infra/: the cluster launcher config, the KubeRay manifests, the image and the Kubernetes
MLflow, checked offline against what reads them: Ray's own cluster-config schema and
validator, KubeRay's CRD schemas (../shared/schemas/kuberay), the project's CLIs (their
parsers and config loader) and the repository's files."""

from __future__ import annotations

import copy
import functools
import importlib.util
import inspect
import itertools
import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tune.experiment import load_config
from tune.preflight import check_experiment, check_resources, trial_resources
from tune.search import check_sweep

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
KUBERAY = INFRA / "kuberay"
CRDS = ROOT.parent / "shared" / "schemas" / "kuberay"
#: Where infra/Dockerfile puts the project in the image.
IMAGE_PROJECT = "/home/ray/podsched"
#: The shared results volume of the Ray pods / nodes.
RESULTS_MOUNT = "/mnt/podsched"
#: libyaml's loader where PyYAML has it: the CRDs are 1-1.4 MB each.
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pin(name: str) -> str:
    """The version spec pyproject.toml gives dependency ``name`` (e.g. '==2.13.0')."""
    for requirement in pyproject()["project"]["dependencies"]:
        match = re.fullmatch(rf"{re.escape(name)}(\[[^\]]*\])?(.*)", requirement)
        if match:
            return match.group(2)
    raise AssertionError(f"{name} is not a dependency")


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@functools.cache
def crds() -> tuple[dict[str, Any], ...]:
    """KubeRay's CRDs, parsed once per test session."""
    return tuple(
        yaml.load(path.read_text(), Loader=FAST_LOADER)
        for path in sorted(CRDS.glob("ray.io_*.yaml"))
    )


def crd_schema(kind: str, api_version: str) -> dict[str, Any]:
    """The openAPIV3Schema of ``kind`` at ``api_version`` from KubeRay's CRD files."""
    group, version = api_version.split("/")
    for crd in crds():
        if crd["spec"]["names"]["kind"] != kind or crd["spec"]["group"] != group:
            continue
        for entry in crd["spec"]["versions"]:
            if entry["name"] == version:
                assert entry["served"], f"{kind} {api_version} is not served"
                return entry["schema"]["openAPIV3Schema"]
    raise AssertionError(f"no CRD for {kind} {api_version} in {CRDS}")


def load_script(relative: str, module_name: str) -> Any:
    """Import a program of the repository (platform/ is not a package) from its file."""
    spec = importlib.util.spec_from_file_location(module_name, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    # As when Python runs it: the script's folder first on sys.path (its sibling modules).
    folder = str((ROOT / relative).parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def project_version() -> str:
    return pyproject()["project"]["version"]


# --- the cluster launcher ------------------------------------------------------------------


def cluster_config() -> dict[str, Any]:
    return yaml.safe_load((INFRA / "ray-cluster.yaml").read_text())


def test_cluster_launcher_config_passes_rays_own_validation() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = cluster_config()
    # As `ray up` does before it talks to the cloud: defaults of the provider, then the
    # schema (ray/autoscaler/ray-schema.json) and Ray's own consistency checks.
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    assert prepared["head_node_type"] == "head"
    assert set(prepared["available_node_types"]) == {"head", "cpu_worker", "gpu_worker"}
    # The validator is live: a node type without `resources` is refused.
    broken = copy.deepcopy(prepared)
    del broken["available_node_types"]["cpu_worker"]["resources"]
    with pytest.raises(jsonschema.ValidationError, match="'resources' is a required property"):
        validate_config(broken)


def test_cluster_launcher_nodes_run_the_project_image_with_token_auth() -> None:
    config = cluster_config()
    version = project_version()
    assert config["docker"]["image"].endswith(f"/podsched:{version}-cpu")
    gpu = config["available_node_types"]["gpu_worker"]
    assert gpu["docker"]["worker_image"].endswith(f"/podsched:{version}-gpu")
    assert gpu["min_workers"] == 0 < gpu["max_workers"]
    cpu = config["available_node_types"]["cpu_worker"]
    assert cpu["min_workers"] < cpu["max_workers"]
    run_options = " ".join(config["docker"]["run_options"])
    assert "--env RAY_AUTH_MODE=token" in run_options
    assert "MLFLOW_TRACKING_URI=" in run_options
    assert f"--volume {RESULTS_MOUNT}:{RESULTS_MOUNT}" in run_options
    assert f"--env PODSCHED_RESULTS={RESULTS_MOUNT}" in run_options
    # Every node gets the launching machine's token.
    assert config["file_mounts"] == {"~/.ray/auth_token": "~/.ray/auth_token"}
    head = " ".join(config["head_start_ray_commands"])
    # The dashboard and job server on the head's loopback (reached by `ray dashboard`'s
    # SSH tunnel), no trials on the head.
    assert "--dashboard-host=127.0.0.1" in head and "--dashboard-port=8265" in head
    assert "--num-cpus=0" in head and "--head" in head
    assert "--address=$RAY_HEAD_IP:6379" in " ".join(config["worker_start_ray_commands"])
    # The head's comment asks for all TCP between the nodes because Ray picks its node
    # ports at random: nothing pins them (a pinned range would let the group be narrower).
    starts = " ".join(config["head_start_ray_commands"] + config["worker_start_ray_commands"])
    for option in ("--node-manager-port", "--object-manager-port", "--min-worker-port"):
        assert option not in starts


def readme_section(heading: str) -> str:
    """The text of README.md's section under ``heading``, up to the next heading."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    return text[start : text.index("\n#", start)]


def test_readme_builds_and_pushes_every_image_the_cluster_launcher_pulls() -> None:
    config = cluster_config()
    images = {config["docker"]["image"]} | {
        node["docker"]["worker_image"]
        for node in config["available_node_types"].values()
        if "worker_image" in node.get("docker", {})
    }
    assert {image.rsplit(":", 1)[1] for image in images} == {"0.1.0-cpu", "0.1.0-gpu"}
    section = readme_section("### Cloud VMs: `ray up`")
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = block.replace("\\\n", " ").splitlines()
    commands = [shlex.split(line, comments=True) for line in lines if line.startswith("docker ")]
    builds = {
        command[command.index("-t") + 1]: command
        for command in commands
        if command[:2] == ["docker", "build"]
    }
    pushes = {command[2] for command in commands if command[:2] == ["docker", "push"]}
    assert set(builds) == images and pushes == images
    # The GPU image with the Dockerfile's own build arguments: Ray's CUDA image, CUDA torch.
    dockerfile_args = {
        rest.split("=", 1)[0]
        for instruction, rest in dockerfile_instructions()
        if instruction == "ARG"
    }
    [gpu] = [image for image in images if image.endswith("-gpu")]
    build_args = [
        value for option, value in itertools.pairwise(builds[gpu]) if option == "--build-arg"
    ]
    assert build_args == ["RAY_VARIANT=gpu", "TORCH_INDEX=cu128"]
    assert {arg.split("=")[0] for arg in build_args} <= dockerfile_args
    [cpu] = [image for image in images if image.endswith("-cpu")]
    assert "--build-arg" not in builds[cpu]  # the Dockerfile's defaults are the CPU ones


def repository_paths(command: str) -> list[str]:
    """The repository files a shell command names: paths under the image's project folder
    and relative paths into the project's own folders."""
    found = []
    for token in shlex.split(command.replace(";", " ")):
        if token.startswith(f"{IMAGE_PROJECT}/"):
            found.append(token.removeprefix(f"{IMAGE_PROJECT}/"))
        elif re.match(r"^(platform|tune|infra|envs|models|tests)/", token):
            found.append(token)
    return found


def test_cluster_launcher_commands_name_files_that_exist() -> None:
    config = cluster_config()
    keys = [key for key in config if key.endswith("_commands")]
    assert "setup_commands" in keys and "head_start_ray_commands" in keys
    named = [path for key in keys for command in config[key] for path in repository_paths(command)]
    assert named == ["platform/simulate.py"]
    for path in named:
        assert (ROOT / path).is_file(), path
    # The smoke check parses with the real CLI.
    simulate = load_script("platform/simulate.py", "podsched_simulate_cli")
    command = shlex.split(config["setup_commands"][0].split(">")[0])
    simulate.build_parser().parse_args(command[2:])


# --- KubeRay ------------------------------------------------------------------------------


def kuberay_resources() -> dict[str, dict[str, Any]]:
    """Every ray.io resource of infra/kuberay by file name."""
    found = {}
    for path in sorted(KUBERAY.glob("*.yaml")):
        for doc in documents(path):
            if doc["apiVersion"].startswith("ray.io/"):
                found[path.name] = doc
    return found


def test_kuberay_manifests_are_valid_against_the_crds() -> None:
    resources = kuberay_resources()
    assert {name: doc["kind"] for name, doc in resources.items()} == {
        "raycluster.yaml": "RayCluster",
        "rayjob-sweep.yaml": "RayJob",
        "rayjob-train.yaml": "RayJob",
    }
    for doc in resources.values():
        assert doc["apiVersion"] == "ray.io/v1"
        jsonschema.validate(doc, crd_schema(doc["kind"], doc["apiVersion"]))
    # The schema is live: a replica count that is not an integer is refused.
    broken = copy.deepcopy(resources["raycluster.yaml"])
    broken["spec"]["workerGroupSpecs"][0]["replicas"] = "one"
    with pytest.raises(jsonschema.ValidationError, match="'one' is not of type 'integer'"):
        jsonschema.validate(broken, crd_schema("RayCluster", "ray.io/v1"))


def ray_containers(cluster: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Ray container of the head and of each worker group, by group name."""
    spec = cluster["spec"]
    groups = {"head": spec["headGroupSpec"]}
    groups.update({group["groupName"]: group for group in spec["workerGroupSpecs"]})
    return {name: group["template"]["spec"]["containers"][0] for name, group in groups.items()}


def test_raycluster_autoscales_cpu_workers_with_an_optional_gpu_group() -> None:
    cluster = kuberay_resources()["raycluster.yaml"]
    spec = cluster["spec"]
    assert spec["rayVersion"] == "2.60.0" and pin("ray").startswith("==2.60.")
    assert spec["enableInTreeAutoscaling"] is True
    assert spec["authOptions"] == {"mode": "token", "secretName": "podsched-ray-token"}
    # authOptions.secretName (a token Secret the lab makes) arrived in KubeRay 1.6.
    header = (KUBERAY / "raycluster.yaml").read_text().splitlines()[0]
    assert "(KubeRay operator >= 1.6, Ray 2.60)" in header
    assert "KubeRay >= 1.6" in readme_section("### Kubernetes: KubeRay")
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    groups = {group["groupName"]: group for group in spec["workerGroupSpecs"]}
    assert groups["cpu"]["minReplicas"] == 1 and groups["cpu"]["maxReplicas"] == 8
    assert groups["gpu"]["replicas"] == groups["gpu"]["minReplicas"] == 0
    containers = ray_containers(cluster)
    version = project_version()
    assert {name: c["image"].rsplit("/", 1)[-1] for name, c in containers.items()} == {
        "head": f"podsched:{version}-cpu",
        "cpu": f"podsched:{version}-cpu",
        "gpu": f"podsched:{version}-gpu",
    }
    assert containers["gpu"]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in containers["cpu"]["resources"]["limits"]
    for container in containers.values():
        # Ray sizes itself from the limits; requests equal them (guaranteed QoS).
        assert container["resources"]["requests"] == container["resources"]["limits"]
        assert {"name": "results", "mountPath": RESULTS_MOUNT} in container["volumeMounts"]
        assert {"name": "PODSCHED_RESULTS", "value": RESULTS_MOUNT} in container["env"]
        [tracking] = [env for env in container["env"] if env["name"] == "MLFLOW_TRACKING_URI"]
        assert tracking["valueFrom"]["secretKeyRef"] == {
            "name": "podsched-mlflow",
            "key": "tracking-uri",
        }
    ports = {port["name"]: port["containerPort"] for port in containers["head"]["ports"]}
    assert ports == {"gcs-server": 6379, "dashboard": 8265, "client": 10001}
    claims = [doc for doc in documents(KUBERAY / "raycluster.yaml") if doc["kind"] != "RayCluster"]
    assert [(doc["kind"], doc["metadata"]["name"]) for doc in claims] == [
        ("PersistentVolumeClaim", "podsched-results")
    ]
    assert claims[0]["spec"]["accessModes"] == ["ReadWriteMany"]


def cpu_worker_pod() -> dict[str, float]:
    """The Ray resources of one pod of raycluster.yaml's CPU group (Ray reads the limits)."""
    container = ray_containers(kuberay_resources()["raycluster.yaml"])["cpu"]
    return {"CPU": float(container["resources"]["limits"]["cpu"]), "GPU": 0.0}


def entrypoint(job: dict[str, Any]) -> list[str]:
    return shlex.split(job["spec"]["entrypoint"])


def test_rayjobs_run_on_the_raycluster_from_the_image_project() -> None:
    resources = kuberay_resources()
    cluster_name = resources["raycluster.yaml"]["metadata"]["name"]
    for name in ("rayjob-train.yaml", "rayjob-sweep.yaml"):
        job = resources[name]
        assert job["spec"]["clusterSelector"] == {"ray.io/cluster": cluster_name}
        runtime_env = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
        assert runtime_env == {"working_dir": IMAGE_PROJECT}
        argv = entrypoint(job)
        assert argv[0] == "python" and (ROOT / argv[1]).is_file()
        storage = argv[argv.index("--storage") + 1]
        assert storage.startswith(f"{RESULTS_MOUNT}/")
        # The submitter pod packs the working_dir from the same image and holds the
        # cluster's token (the Secret of the RayCluster's authOptions).
        [submitter] = job["spec"]["submitterPodTemplate"]["spec"]["containers"]
        assert "command" not in submitter  # KubeRay supplies `ray job submit ... entrypoint`
        head = ray_containers(resources["raycluster.yaml"])["head"]
        assert submitter["image"] == head["image"]
        env = {item["name"]: item for item in submitter["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {
            "name": resources["raycluster.yaml"]["spec"]["authOptions"]["secretName"],
            "key": "auth_token",
        }


def test_train_rayjob_entrypoint_parses_and_its_config_loads() -> None:
    train = load_script("platform/train.py", "podsched_train_cli")
    argv = entrypoint(kuberay_resources()["rayjob-train.yaml"])
    assert argv[:2] == ["python", "platform/train.py"]
    args = train.build_parser().parse_args(argv[2:])
    assert args.config == Path("tune/configs/demo.yaml") and (ROOT / args.config).is_file()
    args.config = ROOT / args.config  # the job's working dir is the project folder
    experiment = train.load(args)
    assert experiment.name == "demo"
    assert experiment.resources.num_env_runners == 4
    assert experiment.checkpoint.max_failures == 3  # a lost pod costs a retry, not the run
    assert args.json is True and args.resume is False
    # What train.py checks before Ray: the environment and model build and act, and one
    # trial (2 learner CPUs + 4 env runners) fits a CPU worker pod of raycluster.yaml.
    check_experiment(experiment)
    assert trial_resources(experiment) == {"CPU": 6.0}
    check_resources(experiment, cpu_worker_pod(), "a CPU worker pod")
    # Remote runners of one CPU each start no helper process (train.py would warn).
    from tune.preflight import resource_warnings

    assert experiment.resources.env_processes == 1
    assert resource_warnings(experiment) == []


def test_sweep_rayjob_entrypoint_parses_and_its_config_loads() -> None:
    sweep = load_script("tune/sweep.py", "podsched_sweep_cli")
    argv = entrypoint(kuberay_resources()["rayjob-sweep.yaml"])
    assert argv[:2] == ["python", "tune/sweep.py"]
    args = sweep.build_parser().parse_args(argv[2:])
    assert (ROOT / args.config).is_file() and args.json is True and args.resume is False
    experiment = load_config(ROOT / args.config, args.set)
    assert experiment.sweep is not None and experiment.sweep.num_samples == 8
    assert experiment.checkpoint.max_failures == 3
    # What sweep.py checks before Ray: the experiment, and the sweep at every probe value.
    check_experiment(experiment)
    check_sweep(experiment)
    check_resources(experiment, cpu_worker_pod(), "a CPU worker pod")


# --- the Kubernetes MLflow ------------------------------------------------------------------


def test_kubernetes_mlflow_is_postgres_backed_and_cluster_internal() -> None:
    docs = {
        (doc["kind"], doc["metadata"]["name"]): doc for doc in documents(KUBERAY / "mlflow.yaml")
    }
    assert set(docs) == {
        ("Secret", "podsched-mlflow"),
        ("Service", "podsched-postgres"),
        ("StatefulSet", "podsched-postgres"),
        ("PersistentVolumeClaim", "podsched-mlflow-artifacts"),
        ("Deployment", "podsched-mlflow"),
        ("Service", "podsched-mlflow"),
        ("NetworkPolicy", "podsched-postgres"),
    }
    # PostgreSQL takes connections from the MLflow server's pods only.
    policy = docs["NetworkPolicy", "podsched-postgres"]["spec"]
    assert policy["podSelector"] == docs["StatefulSet", "podsched-postgres"]["spec"]["selector"]
    [rule] = policy["ingress"]
    assert rule["from"] == [
        {"podSelector": docs["Deployment", "podsched-mlflow"]["spec"]["selector"]}
    ]
    assert rule["ports"] == [{"protocol": "TCP", "port": 5432}]
    for kind, name in docs:
        if kind == "Service":
            assert docs[kind, name]["spec"]["type"] == "ClusterIP", name
    service_port = docs["Service", "podsched-mlflow"]["spec"]["ports"][0]["port"]
    assert docs["Secret", "podsched-mlflow"]["stringData"] == {
        "tracking-uri": f"http://podsched-mlflow:{service_port}"
    }
    postgres = docs["StatefulSet", "podsched-postgres"]["spec"]["template"]["spec"]
    assert postgres["containers"][0]["image"] == "postgres:15"
    [server] = docs["Deployment", "podsched-mlflow"]["spec"]["template"]["spec"]["containers"]
    assert server["command"] == ["mlflow", "server"]
    options = dict(arg.removeprefix("--").split("=", 1) for arg in server["args"])
    postgres_port = docs["Service", "podsched-postgres"]["spec"]["ports"][0]["port"]
    assert options["backend-store-uri"] == (
        f"postgresql+psycopg2://mlflow@podsched-postgres:{postgres_port}/mlflow"
    )
    assert options["port"] == str(service_port)
    assert "podsched-mlflow:5000" in options["allowed-hosts"].split(",")
    mounts = {mount["mountPath"] for mount in server["volumeMounts"]}
    assert options["artifacts-destination"] in mounts
    # The image's user `ray` (uid 1000, group 100) owns nothing on a fresh volume: the
    # pod gives the volume to its group, so artifact uploads can be written.
    pod = docs["Deployment", "podsched-mlflow"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["fsGroup"] == 100
    # The database password comes from a Secret the lab creates, never from the manifest.
    [password] = server["env"]
    assert password["name"] == "PGPASSWORD"
    assert password["valueFrom"]["secretKeyRef"]["name"] == "podsched-mlflow-postgres"
    assert "psycopg2-binary>=2.9" in pyproject()["project"]["optional-dependencies"]["server"]


def test_mlflow_pin_has_the_server_options_the_deployments_pass() -> None:
    from packaging.specifiers import SpecifierSet

    # --allowed-hosts (MLflow's security middleware) exists from MLflow 3.5.0 on; the
    # Kubernetes server always passes it and team_mlflow.py does when told.
    assert "--allowed-hosts" in (KUBERAY / "mlflow.yaml").read_text()
    assert '"--allowed-hosts"' in (INFRA / "team_mlflow.py").read_text()
    allowed = SpecifierSet(pin("mlflow"))
    assert "3.4.99" not in allowed and "3.5.0" in allowed
    from mlflow.cli import server

    assert ["--allowed-hosts"] in [option.opts for option in server.params]


# --- the image -----------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) of infra/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (INFRA / "Dockerfile").read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, rest = line.partition(" ")
            found.append((instruction.upper(), rest.strip()))
    return found


def test_dockerfile_copies_paths_that_exist() -> None:
    copies = [rest for instruction, rest in dockerfile_instructions() if instruction == "COPY"]
    sources = []
    for rest in copies:
        parts = [part for part in shlex.split(rest) if not part.startswith("--")]
        sources += parts[:-1]
    assert sources == [
        "pyproject.toml",
        "README.md",
        "envs",
        "models",
        "tune",
        "platform",
        "infra",
    ]
    for source in sources:
        assert (ROOT / source).exists(), source
    # Everything the packages and programs need is copied: pyproject's packages.
    packages = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {package.rstrip("*") for package in packages} <= set(sources)
    ignored = (INFRA / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", ".git", "ray_results", "mlflow.db"} <= set(ignored)


def pip_arguments(command: str) -> list[str]:
    """The arguments of a ``... -m pip install ...`` command, without --no-cache-dir."""
    tokens = shlex.split(command)
    start = tokens.index("install") + 1
    return [token for token in tokens[start:] if token != "--no-cache-dir"]


def dockerfile_install() -> str:
    """The Dockerfile's RUN that installs torch and then the project (editable)."""
    runs = [rest for instruction, rest in dockerfile_instructions() if instruction == "RUN"]
    [install] = [run for run in runs if " -e " in run]
    return install


def image_project_arguments() -> list[str]:
    """pip's arguments in :func:`dockerfile_install` for the project (after the torch one)."""
    return pip_arguments(dockerfile_install().split("&&")[-1])


def editable_extras(arguments: list[str]) -> list[str]:
    """The extras of pip's ``-e .[a,b]`` argument, in order ([] for a bare ``-e .``)."""
    target = arguments[arguments.index("-e") + 1]
    match = re.fullmatch(r"\.(?:\[([^\]]*)\])?", target)
    assert match is not None, target
    return [extra.strip() for extra in (match.group(1) or "").split(",") if extra.strip()]


def test_dockerfile_installs_the_project_as_the_makefile_does() -> None:
    makefile = (ROOT / "Makefile").read_text()
    [make_line] = [line for line in makefile.splitlines() if re.search(r"pip install .*-e ", line)]
    install = dockerfile_install()
    image, make = image_project_arguments(), pip_arguments(make_line)
    assert make == ["--quiet", "--no-compile", "-e", ".[dev]"]
    # The same options and target; the image adds the `server` extra (the MLflow server's).
    assert image[:-1] == make[:-1] and image[-1].startswith(".[")
    assert editable_extras(image) == [*editable_extras(make), "server"]
    # Byte-compiled afterwards, on every core, the same way in both.
    [make_compile] = [line for line in makefile.splitlines() if "$(PY) -m compileall" in line]
    runs = [rest for instruction, rest in dockerfile_instructions() if instruction == "RUN"]
    [image_compile] = [run for run in runs if "compileall" in run]
    # The Makefile's interpreter is $(PY), and its shell's $( is written $$(.
    make_compile = make_compile.strip().replace("$$($(PY)", "$(python").replace("$(PY)", "python")
    assert make_compile == image_compile
    assert image_compile.startswith("python -m compileall -q -j 0 ")
    # CPU torch at the project's pin, from PyTorch's index of the chosen variant.
    instructions = dockerfile_instructions()
    args = dict(
        rest.split("=", 1)
        for instruction, rest in instructions
        if instruction == "ARG" and "=" in rest
    )
    assert f"=={args['TORCH_VERSION']}" == pin("torch")
    assert args["TORCH_INDEX"] == "cpu" and args["RAY_VARIANT"] == "cpu"
    assert '"https://download.pytorch.org/whl/${TORCH_INDEX}"' in install
    torch_install = install.split("&&")[0]
    assert '"torch==${TORCH_VERSION}"' in torch_install
    # Ray's own image at the project's Ray and Python.
    [base] = [rest for instruction, rest in instructions if instruction == "FROM"]
    assert base == "rayproject/ray:${RAY_VERSION}-${PYTHON_TAG}-${RAY_VARIANT}"
    assert args["RAY_VERSION"].startswith(pin("ray").removeprefix("==").rstrip("*"))
    assert args["PYTHON_TAG"] == "py311"
    # The project folder is made by Ray's user before WORKDIR (which would make it root's):
    # `pip install -e` writes into it.
    workdir = instructions.index(("WORKDIR", IMAGE_PROJECT))
    assert instructions[workdir - 1] == ("RUN", f"mkdir -p {IMAGE_PROJECT}")
    assert not any(instruction == "USER" for instruction, _ in instructions)


def test_image_installs_the_postgres_driver_of_the_kubernetes_mlflow_server() -> None:
    # The server of mlflow.yaml runs from this image on postgresql+psycopg2://: the image
    # must install the extra that declares that driver (`server`), not rely on `dev`
    # happening to list it too.
    [server] = [
        doc["spec"]["template"]["spec"]["containers"][0]
        for doc in documents(KUBERAY / "mlflow.yaml")
        if doc["kind"] == "Deployment"
    ]
    [store] = [arg for arg in server["args"] if arg.startswith("--backend-store-uri=")]
    driver = store.split("=", 1)[1].split("://")[0].split("+")[1]
    assert driver == "psycopg2"
    assert "server" in editable_extras(image_project_arguments())
    optional = pyproject()["project"]["optional-dependencies"]
    server_requirements = [re.split(r"[<>=!~\[; ]", req)[0] for req in optional["server"]]
    assert server_requirements == ["psycopg2-binary"]


# --- the team MLflow as a host service ----------------------------------------------------


def test_systemd_unit_runs_the_team_mlflow_on_loopback() -> None:
    import configparser

    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # systemd's keys are case-sensitive
    unit.read_string((INFRA / "podsched-mlflow.service").read_text())
    service = unit["Service"]
    command = shlex.split(service["ExecStart"])
    checkout = Path(service["WorkingDirectory"])
    assert command[0] == str(checkout / ".venv" / "bin" / "python")  # `make install`'s venv
    script = command[1]
    assert (ROOT / script).is_file() and script == "infra/team_mlflow.py"
    program = load_script(script, "podsched_team_mlflow_unit")
    args = program.build_parser().parse_args(command[2:])
    program.check_arguments(args)
    assert args.command == "serve" and args.host == "127.0.0.1"
    assert service["User"] != "root" and service["KillSignal"] == "SIGTERM"
    # SIGTERM reaches the program alone, which stops MLflow and then PostgreSQL; the
    # default control-group mode would signal all three at once.
    assert service["KillMode"] == "mixed"
    # ... and systemd waits out that ordered stop: MLflow's and PostgreSQL's grace each.
    grace = inspect.signature(program.stop_process).parameters["timeout"].default
    assert grace == 60 and int(service["TimeoutStopSec"]) > 2 * grace
