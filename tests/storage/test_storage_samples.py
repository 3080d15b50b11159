"""Samples of a step with their traces, and log lines read by cursor."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from storage.records.logs import append_logs, logs_since
from storage.records.samples import add_samples, sample_steps, samples_at
from storage.runs import RunNotFoundError, create_run


@pytest.fixture
def run_id(db):
    return create_run(db, algorithm="grpo", config={}, run_id="grpo-s").id


@dataclass
class Trace:
    component: str
    raw: float
    weight: float


def test_samples_round_trip_with_traces(db, run_id):
    group = [
        {
            "prompt": "What is 2+3?",
            "completion": "<think>2+3=5</think><answer>5</answer>",
            "answer": "5",
            "total": 1.5,
            "trace": [Trace("correctness", 1.0, 1.0), {"component": "format", "raw": 1.0}],
            "advantage": 0.7,
            "group": 0,
            "prompt_index": 12,
        },
        {
            "prompt": "What is 2+3?",
            "completion": "6",
            "total": None,
            "trace": [{"component": "correctness", "raw": math.nan}],
            "advantage": math.inf,
            "value": 0.25,
            "group": 0,
            "extra": {"note": "unscorable"},
        },
    ]
    assert add_samples(db, run_id, 4, group) == 2
    first, second = samples_at(db, run_id, 4)
    assert (first.step, first.prompt_index, first.group, first.answer) == (4, 12, 0, "5")
    assert first.completion == "<think>2+3=5</think><answer>5</answer>"
    assert first.total == 1.5 and first.advantage == 0.7 and first.value is None
    assert first.trace == [
        {"component": "correctness", "raw": 1.0, "weight": 1.0},
        {"component": "format", "raw": 1.0},
    ]
    assert first.extra == {}
    assert second.total is None and second.advantage is None and second.value == 0.25
    assert second.trace == [{"component": "correctness", "raw": None}]  # strict JSON
    assert second.extra == {"note": "unscorable"}
    assert first.id < second.id


def test_sample_steps_are_distinct_and_sorted(db, run_id):
    other = create_run(db, algorithm="grpo", config={}).id
    for step in (5, 1, 3, 3):
        add_samples(db, run_id, step, [{"prompt": "p", "completion": "c"}] * 2)
    add_samples(db, other, 2, [{"prompt": "p", "completion": "c"}])
    assert sample_steps(db, run_id) == [1, 3, 5]
    assert len(samples_at(db, run_id, 3)) == 4
    assert samples_at(db, run_id, 2) == []
    assert sample_steps(db, "missing") == []


def test_bad_samples_name_the_field(db, run_id):
    with pytest.raises(ValueError, match=r"samples\[0\]\.completion: required"):
        add_samples(db, run_id, 1, [{"prompt": "p"}])
    with pytest.raises(ValueError, match=r"samples\[1\]\.rewards: not a sample field"):
        add_samples(
            db,
            run_id,
            1,
            [{"prompt": "p", "completion": "c"}, {"prompt": "p", "completion": "c", "rewards": 1}],
        )
    with pytest.raises(TypeError, match=r"samples\[0\]\.total: expected a number"):
        add_samples(db, run_id, 1, [{"prompt": "p", "completion": "c", "total": "high"}])
    with pytest.raises(TypeError, match=r"samples\[0\]\.trace"):
        add_samples(db, run_id, 1, [{"prompt": "p", "completion": "c", "trace": [object()]}])
    with pytest.raises(RunNotFoundError):
        add_samples(db, "missing", 1, [{"prompt": "p", "completion": "c"}])
    assert sample_steps(db, run_id) == []  # nothing half-written


def test_logs_by_cursor(db, run_id):
    assert append_logs(db, run_id, [(1.0, "info", "loading model"), (2.0, "WARNING", "slow")]) == 2
    rows, cursor = logs_since(db, run_id)
    assert [(r.time, r.level, r.message) for r in rows] == [
        (1.0, "INFO", "loading model"),
        (2.0, "WARNING", "slow"),
    ]
    assert logs_since(db, run_id, cursor) == ([], cursor)
    append_logs(db, run_id, [(3.0, "ERROR", "Traceback ...\nValueError: x")])
    rows, cursor2 = logs_since(db, run_id, cursor)
    assert [r.message for r in rows] == ["Traceback ...\nValueError: x"] and cursor2 > cursor
    page, _ = logs_since(db, run_id, 0, limit=2)
    assert len(page) == 2


def test_bad_log_lines_are_refused(db, run_id):
    with pytest.raises(ValueError, match=r"lines\[0\]: expected a \(time, level, message\)"):
        append_logs(db, run_id, [("INFO", "no time")])
    with pytest.raises(TypeError, match=r"lines\[0\]: message must be a string"):
        append_logs(db, run_id, [(1.0, "INFO", None)])
    with pytest.raises(RunNotFoundError):
        append_logs(db, "missing", [(1.0, "INFO", "x")])
