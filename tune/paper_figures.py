"""The papers' headline figures, as data: what ``platform/reproduce.py`` sets the product's
numbers next to.

Each :class:`PaperFigure` is one number a paper reports (or, where it only plots, one claim
without a number), the table or figure it comes from, its unit, and how the product's
evaluation yields the same quantity: which metric, of which policy row, against which
reference row. Read from the papers in ``../shared/papers`` (their README maps them).

Kinds of figure:

- ``value``: the metric of one policy (004: CuSH's NTAT 3.33).
- ``reduction``: how much lower the policy's metric is than the reference's, in percent:
  ``100 * (1 - policy / reference)`` (000: RL-base's average JCT 15.4% below SRTF's).
- ``ratio``: the reference's metric over the policy's, "x times" (002: JCT 4.6x lower
  than the best baseline's).

``bound`` says how the paper states it: ``=`` (the value itself), ``>=`` ("at least": 001's
improvement over all baselines, the smallest of them), ``lower`` (plotted only: the policy
below the reference, no number; ``value`` is None).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("value", "reduction", "ratio")
BOUNDS = ("=", ">=", "lower")
#: The product's learned summary row (``summary.learned`` of train.py's JSON).
LEARNED = "learned"
#: The best heuristic of the product's table (``summary.best_heuristic``).
BEST_HEURISTIC = "best-heuristic"


@dataclass(frozen=True)
class PaperFigure:
    """One reported figure and how the product measures the same thing.

    ``paper`` ("000".."004"), ``setting`` (the reproduction's setting it belongs to, e.g.
    "fat-tree"), ``label`` (what the paper calls it), ``kind``/``bound`` (module
    docstring), ``value`` in ``unit`` (None when only plotted), ``source`` (table or figure
    and section), ``metric`` (the product's metric name), ``policy`` and ``reference``
    (the product's rows: a heuristic name, :data:`LEARNED` or :data:`BEST_HEURISTIC`),
    ``paper_policy``/``paper_reference`` (the paper's names for them).
    """

    paper: str
    setting: str
    label: str
    kind: str
    value: float | None
    unit: str
    source: str
    metric: str
    policy: str
    paper_policy: str
    reference: str | None = None
    paper_reference: str | None = None
    bound: str = "="

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"figure kind {self.kind!r}; allowed: {', '.join(KINDS)}")
        if self.bound not in BOUNDS:
            raise ValueError(f"figure bound {self.bound!r}; allowed: {', '.join(BOUNDS)}")
        if (self.value is None) != (self.bound == "lower"):
            raise ValueError("a figure has a value unless it is only plotted (bound 'lower')")
        if (self.reference is None) != (self.kind == "value"):
            raise ValueError(f"a {self.kind!r} figure needs a reference exactly when not 'value'")

    def measure(self, metrics: dict[str, dict[str, float]]) -> float | None:
        """The product's counterpart from ``metrics`` ({row: {metric: mean}}, rows named
        as :attr:`policy`/:attr:`reference`); None when a row or metric is missing."""
        mine = metrics.get(self.policy, {}).get(self.metric)
        if mine is None:
            return None
        if self.kind == "value":
            return float(mine)
        theirs = metrics.get(self.reference or "", {}).get(self.metric)
        if theirs is None or theirs == 0 or mine == 0:
            return None
        if self.kind == "reduction":
            return 100.0 * (1.0 - float(mine) / float(theirs))
        return float(theirs) / float(mine)

    def reached(self, measured: float | None) -> bool | None:
        """Whether ``measured`` reaches the paper's figure: for a ``value`` of a metric to
        minimize, at most the paper's; for a reduction or ratio, at least the paper's
        (``lower``: the policy below the reference at all). None when not measured, and
        for a baseline's own value (context, not a goal)."""
        if measured is None:
            return None
        if self.kind == "value" and self.policy != LEARNED:
            # A baseline's own value is context (how our environment compares), not a goal.
            return None
        if self.bound == "lower":
            return measured > (1.0 if self.kind == "ratio" else 0.0)
        assert self.value is not None
        if self.kind == "value":
            return measured <= self.value
        return measured >= self.value


def _f(*args: object, **kwargs: object) -> PaperFigure:
    return PaperFigure(*args, **kwargs)  # type: ignore[arg-type]


def _reductions(
    paper: str,
    setting: str,
    paper_policy: str,
    values: dict[str, tuple[str, float | None]],
    source: str,
    metric: str = "avg_jct",
    label: str = "average JCT reduction",
    bound: str = "=",
) -> tuple[PaperFigure, ...]:
    """One ``reduction`` figure of ``paper_policy`` (the learned row) per paper baseline:
    ``values`` maps the paper's baseline name to (product row, percent)."""
    return tuple(
        PaperFigure(
            paper,
            setting,
            f"{label} vs {name}",
            "reduction",
            value,
            "%",
            source,
            metric,
            LEARNED,
            paper_policy,
            reference=row,
            paper_reference=name,
            bound=bound,
        )
        for name, (row, value) in values.items()
    )


#: 004 Table 1, Sierra: every heuristic row's NTAT (paper name, product row, value).
_004_TABLE1_SIERRA = (
    ("FCFS DF", "fcfs+df", 7.13),
    ("FCFS BF", "fcfs+bf", 5.71),
    ("SJF DF", "sjf+df", 5.19),
    ("SJF BF", "sjf+bf", 4.13),
    ("DRF DF", "drf+df", 7.43),
    ("DRF BF", "drf+bf", 5.54),
    ("Rand DF", "random+df", 7.17),
    ("Rand BF", "random+bf", 5.42),
)
_001_BASELINES = {"Tetris": "fifo+tetris", "LB": "fifo+load-balancing", "LIF": "fifo+lif"}

FIGURES: tuple[PaperFigure, ...] = (
    # 000 (Ryu & Eo) §V-B, Fig. 5: "Comparing average JCT to SRTF and LAS, RL-base
    # (RL-Hybrid) achieves 15.4% (12.1%) and 18.2% (15.1%) reduction"; p90 16.4% and 20.7%
    # for both.
    *(
        figure
        for setting, name, average in (
            ("rl-base", "RL-base", {"SRTF": ("srtf", 15.4), "LAS": ("las", 18.2)}),
            ("rl-hybrid", "RL-Hybrid", {"SRTF": ("srtf", 12.1), "LAS": ("las", 15.1)}),
        )
        for figure in (
            *_reductions("000", setting, name, average, "§V-B Fig. 5"),
            *_reductions(
                "000",
                setting,
                name,
                {"SRTF": ("srtf", 16.4), "LAS": ("las", 20.7)},
                "§V-B Fig. 5",
                metric="p90_jct",
                label="p90 JCT reduction",
            ),
        )
    ),
    # 001 (Zhao & Wu) §VI-B Fig. 7 (fat-tree, uniform 15 jobs/interval): "at least 24.3%
    # improvement in terms of average JCT as compared to all baselines"; §VI-D Fig. 9:
    # "outperforms baselines by at least 21% under VL2 and BCube". JCT in intervals.
    *_reductions(
        "001",
        "fat-tree",
        "MARL (device-level)",
        {name: (row, 24.3) for name, row in _001_BASELINES.items()},
        "§VI-B Fig. 7 (uniform)",
        bound=">=",
    ),
    *_reductions(
        "001",
        "vl2",
        "MARL",
        {name: (row, 21.0) for name, row in _001_BASELINES.items()},
        "§VI-D Fig. 9",
        bound=">=",
    ),
    *_reductions(
        "001",
        "bcube",
        "MARL",
        {name: (row, 21.0) for name, row in _001_BASELINES.items()},
        "§VI-D Fig. 9",
        bound=">=",
    ),
    # 002 (SCED2) §IV-B, Fig. 7 (realistic trace, 68% 1-GPU jobs): "outperforms the best
    # among the baselines on execution effectiveness by 1.6x, makespan by 2.1x and JCT by
    # 4.6x". (Execution effectiveness, higher is better, is left out: a ratio here is
    # reference over policy, right for quantities to minimize.)
    _f(
        "002",
        "dqn",
        "average JCT, best baseline over SCED2",
        "ratio",
        4.6,
        "x",
        "§IV-B Fig. 7 (68% 1-GPU)",
        "avg_jct",
        LEARNED,
        "SCED2",
        reference=BEST_HEURISTIC,
        paper_reference="best baseline",
    ),
    _f(
        "002",
        "dqn",
        "makespan, best baseline over SCED2",
        "ratio",
        2.1,
        "x",
        "§IV-B Fig. 7 (68% 1-GPU)",
        "makespan",
        LEARNED,
        "SCED2",
        reference=BEST_HEURISTIC,
        paper_reference="best baseline",
    ),
    # 003 (RL-TAPS) §5.3, Fig. 4 (non-streaming): mean slowdown "clearly better than the
    # baseline schedulers"; plotted only, no number in the text. Measured for 003's
    # REINFORCE protocol and the PPO variant alike.
    *(
        figure
        for setting in ("reinforce", "ppo")
        for figure in _reductions(
            "003",
            setting,
            "RL-TAPS",
            {"Random": ("random", None), "SJF": ("sjf", None), "Tetris": ("tetris", None)},
            "§5.3 Fig. 4 (plotted only)",
            metric="mean_slowdown",
            label="mean slowdown reduction",
            bound="lower",
        )
    ),
    # 004 (CuSH) §4.2 Table 1, Sierra (128 nodes x 2 CPUs + 4 GPUs): CuSH NTAT 3.33, the best
    # heuristic SJF BF 4.13 ("an improvement of 19%"), and "42% with respect to the FCFS
    # policy": FCFS BF's 5.71 (1 - 3.33 / 5.71 = 41.7%; FCFS DF's 7.13 would be 53%).
    # Measured for 004's protocol (REINFORCE per head) and the PPO variant alike.
    *(
        figure
        for setting in ("sierra", "sierra-ppo")
        for figure in (
            _f(
                "004",
                setting,
                "NTAT of CuSH",
                "value",
                3.33,
                "NTAT",
                "Table 1 (Sierra)",
                "avg_ntat",
                LEARNED,
                "CuSH",
            ),
            *(
                _f(
                    "004",
                    setting,
                    f"NTAT of {name}",
                    "value",
                    value,
                    "NTAT",
                    "Table 1 (Sierra)",
                    "avg_ntat",
                    row,
                    name,
                )
                for name, row, value in _004_TABLE1_SIERRA
            ),
            *_reductions(
                "004",
                setting,
                "CuSH",
                {"SJF BF": ("sjf+bf", 19.0), "FCFS BF": ("fcfs+bf", 42.0)},
                "§4.2 Table 1 (Sierra)",
                metric="avg_ntat",
                label="NTAT reduction",
            ),
        )
    ),
)

PAPERS: tuple[str, ...] = ("000", "001", "002", "003", "004")


def figures_of(paper: str) -> tuple[PaperFigure, ...]:
    """The figures of ``paper`` ("000".."004"), in the order above."""
    if paper not in PAPERS:
        raise ValueError(f"paper {paper!r} is unknown; allowed: {', '.join(PAPERS)}")
    return tuple(figure for figure in FIGURES if figure.paper == paper)
