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
"""

from __future__ import annotations

import json
import os

SPIN_VARIABLE = "GOMP_SPINCOUNT"
DEFAULT_SPIN_COUNT = "10000"
#: The variables that choose how OpenMP threads wait: a user's choice of either is kept.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", SPIN_VARIABLE)
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


def worker_env_vars(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``env_vars`` for ``ray.init(runtime_env=...)``: the wait settings
    (:func:`wait_settings`) and ``extra``, without the variables the job's runtime
    environment sets already. Ray refuses to merge a job's and a driver's runtime
    environments that set the same variable, and the job's value reaches the workers
    anyway."""
    wanted = {**wait_settings(), **(extra or {})}
    taken = job_env_vars()
    return {name: value for name, value in wanted.items() if name not in taken}
