"""Per-step distributions over a whole generation batch: kept whole or as even quantiles, read by
cursor, truncated on resume and deleted with their run."""

from __future__ import annotations

import math

import pytest

from storage.records.distributions import (
    MAX_VALUES,
    add_distributions,
    distributions_since,
    even_quantiles,
)
from storage.records.samples import add_samples, samples_at
from storage.runs import RunNotFoundError, create_run, delete_run, truncate_run


@pytest.fixture
def run_id(db):
    return create_run(db, algorithm="grpo", config={}, run_id="grpo-d").id


def test_a_small_batch_is_kept_whole_sorted_without_unscored_values(db, run_id):
    written = add_distributions(
        db, run_id, 3, {"dist/reward": [1.0, None, 0.0, math.nan, 0.5], "dist/length": [7, 3]}
    )
    assert written == 2
    rows, cursor = distributions_since(db, run_id)
    assert [(r.step, r.name, r.count, r.values) for r in rows] == [
        (3, "dist/reward", 3, [0.0, 0.5, 1.0]),
        (3, "dist/length", 2, [3.0, 7.0]),
    ]
    assert cursor == rows[-1].id
    assert distributions_since(db, run_id, cursor) == ([], cursor)


def test_a_large_batch_is_kept_as_equal_mass_quantiles(db, run_id):
    values = list(range(1000))  # 1000 completions: each kept value stands for 1000/128 of them
    add_distributions(db, run_id, 1, {"dist/length": values})
    (row,), _ = distributions_since(db, run_id)
    assert row.count == 1000 and len(row.values) == MAX_VALUES
    # The inverse empirical CDF at (i + 1/2) / 128: index ceil((i + 0.5) * 1000 / 128) - 1.
    assert row.values[0] == 3.0 and row.values[64] == 503.0 and row.values[-1] == 996.0
    assert row.values == sorted(row.values)


def test_even_quantiles_of_ties_keep_their_shares():
    ordered = [0.0] * 75 + [1.0] * 25
    kept = even_quantiles(ordered, 20)
    assert kept.count(0.0) == 15 and kept.count(1.0) == 5  # 75% and 25%
    assert even_quantiles([1.0, 2.0], 20) == [1.0, 2.0]


def test_values_keep_four_significant_digits(db, run_id):
    add_distributions(db, run_id, 1, {"dist/advantage": [0.70710678, -1234567.0]})
    (row,), _ = distributions_since(db, run_id)
    assert row.values == [-1235000.0, 0.7071]


@pytest.mark.parametrize(
    ("values", "error", "field"),
    [
        ({"": [1.0]}, ValueError, "distribution name"),
        ({"x" * 201: [1.0]}, ValueError, "distribution name"),
        ({"dist/reward": "0.5"}, TypeError, "distributions['dist/reward']"),
        ({"dist/reward": [0.5, "high"]}, TypeError, "distributions['dist/reward'][1]"),
        ([("dist/reward", [1.0])], TypeError, "distributions"),
    ],
)
def test_bad_input_names_the_field(db, run_id, values, error, field):
    with pytest.raises(error, match=field.replace("[", r"\[").replace("(", r"\(")):
        add_distributions(db, run_id, 1, values)
    assert distributions_since(db, run_id) == ([], 0)


def test_a_missing_run_is_refused(db):
    with pytest.raises(RunNotFoundError):
        add_distributions(db, "nope", 1, {"dist/reward": [1.0]})


def test_resume_truncates_and_delete_removes_them(db, run_id):
    for step in (1, 2, 3):
        add_distributions(db, run_id, step, {"dist/reward": [step]})
    truncate_run(db, run_id, 2)
    assert [r.step for r in distributions_since(db, run_id)[0]] == [1, 2]
    assert delete_run(db, run_id)
    assert distributions_since(db, run_id) == ([], 0)


def test_a_sample_keeps_its_length_in_tokens(db, run_id):
    rows = [{"prompt": "p", "completion": "c", "tokens": 96}, {"prompt": "p", "completion": "c"}]
    add_samples(db, run_id, 1, rows)
    assert [s.tokens for s in samples_at(db, run_id, 1)] == [96, None]
    with pytest.raises(ValueError, match=r"samples\[0\]\.tokens"):
        add_samples(db, run_id, 1, [{"prompt": "p", "completion": "c", "tokens": -1}])
