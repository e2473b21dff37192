"""``make_scheduler`` and ``scheduler_names``."""

from __future__ import annotations

import numpy as np
import pytest

from envs.schedulers import (
    DelayedShortestIdealTime,
    LeastInterference,
    Scheduler,
    ShortestActualTime,
    make_scheduler,
    scheduler_names,
    split_scheduler_name,
)

ORDERINGS = (
    "fifo",
    "sjf",
    "srtf",
    "las",
    "drf",
    "sif",
    "dsif",
    "dsif-patient",
    "saf",
    "lrf",
    "spf",
    "random",
    "gittins",
    "fifo-patient",
    "drf-patient",
    "saf-patient",
    "lrf-patient",
    "spf-patient",
)
PLACEMENTS = (
    "packing",
    "tetris",
    "load-balancing",
    "lif",
    "depth-first",
    "breadth-first",
    "locality",
    "random",
    "quiet-packing",
)


def test_the_names_of_the_issue():
    names = scheduler_names()
    assert names.orderings == ORDERINGS
    assert names.placements == PLACEMENTS
    assert len(names.combinations()) == len(ORDERINGS) * len(PLACEMENTS)
    assert "las+lif" in names.combinations()


@pytest.mark.parametrize("name", scheduler_names().combinations())
def test_every_combination_builds(name):
    scheduler = make_scheduler(name)
    assert isinstance(scheduler, Scheduler)
    assert scheduler.name == name


def test_parts_are_wired():
    scheduler = make_scheduler("saf+lif", rng=np.random.default_rng(1), backfill=False)
    assert isinstance(scheduler.ordering, ShortestActualTime)
    assert isinstance(scheduler.placement, LeastInterference)
    # SAF's oracle asks the scheduler's own placement.
    assert scheduler.ordering.placement is scheduler.placement
    assert scheduler.backfill is False
    assert isinstance(make_scheduler("dsif+packing").ordering, DelayedShortestIdealTime)
    assert make_scheduler("dsif+packing").ordering.max_delays == 3
    saf_patient = make_scheduler("saf-patient+lif")
    assert isinstance(saf_patient.ordering, ShortestActualTime)
    assert saf_patient.ordering.placement is saf_patient.placement
    assert repr(saf_patient.ordering) == "PatientShortestActualTime(LeastInterference())"


@pytest.mark.parametrize("ordering", ["fifo", "drf", "saf", "lrf", "spf", "dsif"])
def test_a_patient_ordering_is_its_ordering_with_thirty_delays(ordering):
    impatient = make_scheduler(f"{ordering}+packing").ordering
    patient = make_scheduler(f"{ordering}-patient+packing").ordering
    assert isinstance(patient, type(impatient))
    assert (impatient.max_delays, patient.max_delays) == (3 if ordering == "dsif" else 0, 30)
    assert patient.name == f"{ordering}-patient"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("fifo", "not of the form ordering\\+placement"),
        ("fcfs+packing", "unknown ordering 'fcfs'"),
        ("fifo+pack", "unknown placement 'pack'"),
        ("fifo+packing+lif", "unknown placement 'packing\\+lif'"),
    ],
)
def test_unknown_names_list_the_known_ones(name, message):
    for check in (make_scheduler, split_scheduler_name):
        with pytest.raises(ValueError, match=message) as error:
            check(name)
        assert "orderings: fifo, sjf" in str(error.value)
        assert "placements: packing, tetris" in str(error.value)


def test_a_name_splits_into_its_parts():
    assert split_scheduler_name(" dsif+locality") == ("dsif", "locality")
    assert split_scheduler_name("las+load-balancing") == ("las", "load-balancing")


def test_a_name_must_be_a_string():
    for check in (make_scheduler, split_scheduler_name):
        with pytest.raises(TypeError, match="fifo\\+packing"):
            check(None)  # type: ignore[arg-type]
