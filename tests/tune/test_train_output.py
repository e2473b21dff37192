"""What a train.py --json subprocess leaves: its result kept whenever it printed one."""

from __future__ import annotations

import json

from tune.train_output import read_train_output

RESULT = {"training_s": 12.5, "evaluation": {"fifo+packing": {}}}


def test_a_clean_run_gives_its_payload_and_no_problem() -> None:
    stdout = "Tune progress that went to stdout\n" + json.dumps(RESULT) + "\n"
    assert read_train_output(stdout, 0) == (RESULT, "")


def test_an_unlogged_evaluation_keeps_the_result_and_says_where_its_files_are() -> None:
    # train.py exits 1 when MLflow would not take the evaluation runs, after printing the
    # whole result: the training and the evaluation are not lost.
    unlogged = {**RESULT, "evaluation_unlogged": "/results/unlogged-evaluations/20261129"}
    payload, problem = read_train_output(json.dumps(unlogged), 1)
    assert payload == unlogged
    assert problem == (
        "train.py exited with status 1; its evaluation was not logged, the files are in "
        "/results/unlogged-evaluations/20261129"
    )


def test_no_payload_is_a_failure_whatever_the_status() -> None:
    for stdout, status in (("", 2), ("Traceback (most recent call last):", 1), ("[1, 2]", 0)):
        assert read_train_output(stdout, status) == (
            None,
            f"train.py exited with status {status} and no result",
        )
