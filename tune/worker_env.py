"""The environment of the processes that run podsched's torch code.

Torch's CPU operators run on an OpenMP team (``torch.get_num_threads()`` threads, 2 for the
demo's learner; libgomp in torch's Linux wheels). A thread that finishes its share of an
operator *spins* at the barrier, waiting for the others, for GNU OpenMP's default of 300,000
spins before it sleeps. That is cheap on a machine with a core per thread and ruinous on a
shared one: when other processes hold the cores, the spinning thread burns the time slice
the thread it waits for needs, and every one of the thousands of small operators of a PPO
iteration pays a scheduler tick. Measured on this 2-core machine (demo, PPO in one
process, s per iteration; README "Training throughput"):

=====================  ===========  ========================  =========================
waits                  quiet        two busy processes beside  shared with Ray tests
=====================  ===========  ========================  =========================
default (300,000)      3.4-3.7      36.5                      22-52
``GOMP_SPINCOUNT``
10,000                 3.4          3.7
``OMP_WAIT_POLICY``
PASSIVE                5.1          8.6                       4.9-6.5
=====================  ===========  ========================  =========================

A short spin keeps the quiet machine's speed (a team that meets again within microseconds
still finds its threads awake) and gives the cores back under load; passive waits (sleep at
once) cost a third on a quiet machine. OpenMP reads the variables once, when torch loads it,
so they must be in a process's environment before ``import torch``: the programs call
:func:`bound_spin_waits` first thing, and :func:`worker_env_vars` gives the setting to every
Ray worker through ``ray.init``'s runtime environment. A wait setting the user exported (or
a job's runtime environment set) is kept.

**The hash seed.** RLlib's multi-agent episodes hand out the agents that act next, and
the connectors gather their observations into the module's batch, by iterating over *sets*
of agent ids (``MultiAgentEpisode.get_agents_to_act``). A set of strings iterates in an
order that depends on Python's per-process string hash seed, so the same seeded experiment
put its agents' rows in a different order in every process, and every exploration draw went
to a different agent: two runs of one seed diverged in their first iteration (the demo's
first-iteration entropy 1.57 in one process, 1.70 in another). With ``PYTHONHASHSEED``
fixed, runs of a seed repeat bit for bit on one machine (measured). The interpreter reads
it once, at start, so :func:`worker_env_vars` gives every Ray worker (where Tune's trials
and the env runners sample) ``PYTHONHASHSEED=0``, unless the user's environment or the
submitted job's runtime environment already chose one.
"""

from __future__ import annotations

import json
import os

SPIN_VARIABLE = "GOMP_SPINCOUNT"
DEFAULT_SPIN_COUNT = "10000"
#: The variables that choose how OpenMP threads wait: a user's choice of either is kept.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", SPIN_VARIABLE)
HASH_SEED_VARIABLE = "PYTHONHASHSEED"
#: The workers' string hash seed when nobody chose one: any fixed value makes RLlib's
#: agent order, and so a seeded run, repeat.
DEFAULT_HASH_SEED = "0"
# Set by Ray's job manager in the driver of a job submitted with `ray job submit`.
JOB_CONFIG_VARIABLE = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def wait_settings() -> dict[str, str]:
    """The wait variables this process's environment chose, or the short spin."""
    chosen = {name: os.environ[name] for name in WAIT_VARIABLES if name in os.environ}
    return chosen or {SPIN_VARIABLE: DEFAULT_SPIN_COUNT}


def bound_spin_waits() -> None:
    """Give this process short OpenMP spin waits unless its environment already chose how
    threads wait; it takes effect only if torch has not been imported yet."""
    os.environ.update(wait_settings())


def job_env_vars() -> dict[str, str]:
    """The environment variables the runtime environment of the Ray job this process
    drives already sets (empty outside ``ray job submit``)."""
    raw = os.environ.get(JOB_CONFIG_VARIABLE)
    if not raw:
        return {}
    runtime_env = json.loads(raw).get("runtime_env") or {}
    return dict(runtime_env.get("env_vars") or {})


def hash_seed_setting() -> dict[str, str]:
    """The string hash seed this process's environment chose, or the fixed default (the
    module docstring says why workers need one)."""
    return {HASH_SEED_VARIABLE: os.environ.get(HASH_SEED_VARIABLE, DEFAULT_HASH_SEED)}


def worker_env_vars(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``env_vars`` for ``ray.init(runtime_env=...)``: the wait settings
    (:func:`wait_settings`), the hash seed (:func:`hash_seed_setting`) and ``extra``,
    without the variables the job's runtime environment sets already. Ray refuses to merge
    a job's and a driver's runtime environments that set the same variable, and the job's
    value reaches the workers anyway."""
    wanted = {**wait_settings(), **hash_seed_setting(), **(extra or {})}
    taken = job_env_vars()
    return {name: value for name, value in wanted.items() if name not in taken}
