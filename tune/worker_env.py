"""The environment of the processes that run podsched's torch code.

Torch's CPU operators run on an OpenMP team (``torch.get_num_threads()`` threads, 2 for the
demo's learner). By default a thread that finishes its share of an operator *spins* at the
barrier, waiting for the others, and OpenMP only puts it to sleep after a long spin. That is
cheap on a machine with a core per thread and ruinous on a shared one: when another process
(a second trial, a remote env runner, Ray's own daemons, a test suite) holds one of the
cores, the spinning thread burns its time slice while the thread it waits for is not
running, and every one of the thousands of small operators of a PPO iteration pays a
scheduler tick. Measured on this 2-core machine with one other busy process, the demo's
iteration took 22-52 s with spinning waits against 4.9-6.5 s with passive ones (README
"Training throughput"). ``OMP_WAIT_POLICY=PASSIVE`` makes the waiting thread yield its core.

OpenMP reads the variable once, when torch loads it, so it must be in a process's
environment before ``import torch``: the programs call :func:`wait_passively` first thing,
and :func:`worker_env_vars` gives it to every Ray worker through ``ray.init``'s runtime
environment. A value the user exported (or a job's runtime environment set) is kept.
"""

from __future__ import annotations

import json
import os

WAIT_POLICY = "OMP_WAIT_POLICY"
DEFAULT_WAIT_POLICY = "PASSIVE"
# Set by Ray's job manager in the driver of a job submitted with `ray job submit`.
JOB_CONFIG_VARIABLE = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def wait_passively() -> None:
    """Give this process passive OpenMP waits unless its environment already chose a
    policy; it takes effect only if torch has not been imported yet."""
    os.environ.setdefault(WAIT_POLICY, DEFAULT_WAIT_POLICY)


def job_env_vars() -> dict[str, str]:
    """The environment variables the runtime environment of the Ray job this process
    drives already sets (empty outside ``ray job submit``)."""
    raw = os.environ.get(JOB_CONFIG_VARIABLE)
    if not raw:
        return {}
    runtime_env = json.loads(raw).get("runtime_env") or {}
    return dict(runtime_env.get("env_vars") or {})


def worker_env_vars(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``env_vars`` for ``ray.init(runtime_env=...)``: the wait policy (this process's, or
    :data:`DEFAULT_WAIT_POLICY`) and ``extra``, without the variables the job's runtime
    environment sets already. Ray refuses to merge a job's and a driver's runtime
    environments that set the same variable, and the job's value reaches the workers
    anyway."""
    wanted = {WAIT_POLICY: os.environ.get(WAIT_POLICY, DEFAULT_WAIT_POLICY), **(extra or {})}
    taken = job_env_vars()
    return {name: value for name, value in wanted.items() if name not in taken}
