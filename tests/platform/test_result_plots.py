"""JCT CDFs count every job that arrived: a job unfinished when the run ended keeps the
curve below 1, and the plot says how many were unfinished."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "platform"))
import result_plots
from result_plots import CENSORED_NOTE, censored_cdf, plot_jct_cdfs, plot_results

from envs.sim import Simulator, SimulatorConfig
from envs.sim.metrics import SimulationResult
from envs.topology import build_cluster
from tests.envs.sim.conftest import exact_workload

# Four jobs: two finished in 1 h and 2 h, two still unfinished after 0.5 h and 10 h.
HALF_DONE = {"seconds": [3600.0, 1800.0, 7200.0, 36000.0], "unfinished": [False, True, False, True]}


def test_unfinished_jobs_keep_the_curve_at_the_fraction_finished() -> None:
    steps = censored_cdf(HALF_DONE)
    # 1/4 at 1 h, 2/4 at 2 h, then flat at 2/4 to the longest time so far (10 h); over
    # finished jobs alone it read 1/2 at 1 h and 1 at 2 h.
    np.testing.assert_allclose(steps.hours, [1.0, 2.0, 10.0])
    np.testing.assert_allclose(steps.fraction, [0.25, 0.5, 0.5])
    assert (steps.jobs, steps.unfinished) == (4, 2)


def test_cdf_of_all_finished_none_finished_and_plain_values() -> None:
    done = censored_cdf({"seconds": [7200.0, 3600.0], "unfinished": [False, False]})
    np.testing.assert_allclose(done.hours, [1.0, 2.0])
    np.testing.assert_allclose(done.fraction, [0.5, 1.0])
    assert done.unfinished == 0
    # None finished: flat at 0 from 0 to the longest time so far (5 h).
    none = censored_cdf({"seconds": [18000.0, 3600.0], "unfinished": [True, True]})
    np.testing.assert_allclose(none.hours, [0.0, 5.0])
    np.testing.assert_allclose(none.fraction, [0.0, 0.0])
    # Plain values: NaN or None an unfinished job whose time so far is unknown, counted.
    plain = censored_cdf([3600.0, 7200.0, float("nan"), None])
    np.testing.assert_allclose(plain.hours, [1.0, 2.0, 2.0])
    np.testing.assert_allclose(plain.fraction, [0.25, 0.5, 0.5])
    assert (plain.jobs, plain.unfinished) == (4, 2)
    assert censored_cdf({"seconds": [], "unfinished": []}).jobs == 0


@pytest.fixture
def kept_figures(monkeypatch) -> list:
    """The figures the plots draw, kept open for the test to read."""
    figures: list = []
    monkeypatch.setattr(result_plots.plt, "close", figures.append)
    return figures


def test_the_held_out_cdf_says_which_curves_stop_short(tmp_path: Path, kept_figures) -> None:
    done = {"seconds": [3600.0, 7200.0, 30000.0, 36000.0], "unfinished": [False] * 4}
    plot_jct_cdfs({"learned-greedy": HALF_DONE, "fifo+packing": done}, tmp_path / "cdf.png")
    assert (tmp_path / "cdf.png").read_bytes()[:4] == b"\x89PNG"
    (axis,) = kept_figures[0].axes
    assert CENSORED_NOTE in axis.get_title()
    labels = [text.get_text() for text in axis.get_legend().get_texts()]
    assert labels == ["learned-greedy (2 of 4 jobs unfinished)", "fifo+packing"]
    learned, heuristic = axis.get_lines()
    assert max(learned.get_ydata()) == 0.5 and max(heuristic.get_ydata()) == 1.0
    assert axis.get_ylim() == (0.0, 1.05)  # the gap to 1 shows
    # Nothing unfinished: the title carries no note.
    plot_jct_cdfs({"fifo+packing": done}, tmp_path / "done.png")
    assert kept_figures[1].axes[0].get_title() == "Held-out JCT CDF"


def test_a_simulation_cut_at_its_horizon_plots_its_queued_job(tmp_path: Path, kept_figures) -> None:
    # Two 160 s jobs, one GPU at a time (the second waits), cut at 200 s: the first
    # finished, the second ran 40 s of its 160.
    class OneAtATime:
        def schedule(self, sim: Simulator) -> None:
            if not len(sim.running_jobs()):
                sim.place(int(sim.waiting_jobs()[0]), [0])

    cluster = build_cluster("flat", servers=1, gpus_per_server=4)
    sim = Simulator(
        cluster, exact_workload([0.0, 0.0], [0, 0], [1, 1]), SimulatorConfig(horizon_s=200.0)
    )
    sim.run(OneAtATime())
    plot_results([SimulationResult.from_simulator(sim, "fifo")], tmp_path / "run.png")
    cdf_axis = kept_figures[0].axes[0]
    (line,) = cdf_axis.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [160 / 3600, 200 / 3600])
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.5])
    assert CENSORED_NOTE in cdf_axis.get_title()
    assert cdf_axis.get_legend().get_texts()[0].get_text() == "fifo (1 of 2 jobs unfinished)"
