"""Jobs and workloads: model catalogs, the struct-of-arrays ``Workload``, synthetic
generators and real-trace readers.

Typical use::

    import numpy as np
    from envs.workload import make_workload, read_philly, TraceOptions, drop_infeasible

    rng = np.random.default_rng(7)
    jobs = make_workload("uniform", num_jobs=300, rng=rng, num_schedulers=20)
    trace, report = read_philly("../shared/traces/philly.csv", TraceOptions(max_jobs=1000), rng=rng)
    trace, dropped = drop_infeasible(trace, max_gpus_per_job=1024, max_cpus_per_job=4096)

Modules: ``catalog`` (model profiles per paper), ``jobs`` (``Workload``), ``arrivals``
(arrival processes), ``generators`` (seeded synthetic workloads and ``make_workload``),
``parsing`` (field parsers, ``TraceFormatError``), ``csvrows`` (trace rows with line
numbers), ``trace_pipeline`` (options, report and the steps every reader shares),
``traces`` (the Philly, Helios, PAI and column-map readers), ``feasibility`` (jobs that
can never fit).
"""

from envs.workload.catalog import (
    COLLECTIVE_PATTERNS,
    DEFAULT_CATALOG,
    ModelCatalog,
    ModelProfile,
    catalog_names,
    derived_communication,
    get_catalog,
)
from envs.workload.feasibility import (
    InfeasibleJobError,
    check_feasible,
    drop_infeasible,
    infeasible_mask,
)
from envs.workload.generators import (
    DEEPSHARE_MIXES,
    MAX_JOBS,
    SCED2_MODEL_SHARES,
    bursty_workload,
    cush_workload,
    deeprm_workload,
    deepshare_workload,
    make_workload,
    poisson_workload,
    sced2_workload,
    uniform_workload,
    workload_kinds,
    workload_options,
)
from envs.workload.jobs import BASE_RESOURCES, Workload, concatenate
from envs.workload.parsing import COLUMN_KEYS, TIME_UNITS, TraceFormatError, parse_column_map
from envs.workload.traces import (
    TRACE_FORMATS,
    TraceOptions,
    TraceReport,
    assign_models,
    read_csv_trace,
    read_helios,
    read_pai,
    read_philly,
    read_trace,
)

__all__ = [
    "BASE_RESOURCES",
    "COLLECTIVE_PATTERNS",
    "COLUMN_KEYS",
    "DEEPSHARE_MIXES",
    "DEFAULT_CATALOG",
    "MAX_JOBS",
    "SCED2_MODEL_SHARES",
    "TIME_UNITS",
    "TRACE_FORMATS",
    "InfeasibleJobError",
    "ModelCatalog",
    "ModelProfile",
    "TraceFormatError",
    "TraceOptions",
    "TraceReport",
    "Workload",
    "assign_models",
    "bursty_workload",
    "catalog_names",
    "check_feasible",
    "concatenate",
    "cush_workload",
    "deeprm_workload",
    "deepshare_workload",
    "derived_communication",
    "drop_infeasible",
    "get_catalog",
    "infeasible_mask",
    "make_workload",
    "parse_column_map",
    "poisson_workload",
    "read_csv_trace",
    "read_helios",
    "read_pai",
    "read_philly",
    "read_trace",
    "sced2_workload",
    "uniform_workload",
    "workload_kinds",
    "workload_options",
]
