"""The Runs view's distributions and group spreads without a browser: rows read by cursor into a
bounded history, heat maps binned from it, group spreads as TRL computes them, and the samples
filters."""

from __future__ import annotations

import statistics

import pytest

from engine.tracking import metric_names as m
from storage import runs as run_store
from storage.paths import db_path
from storage.records.distributions import add_distributions
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus, Sample
from ui.plots.distribution_series import KEPT_VALUES, MAX_STEPS, DistributionHistory, StepValues
from ui.plots.distributions import Bins, bins_for, counts, distribution_figure, median
from ui.runs import sample_groups as g
from ui.runs.poll import poll
from ui.runs.state import RunView


@pytest.fixture
def db(data_dir):
    database = Database(db_path(data_dir))
    yield database
    database.close()


def make_run(db, run_id="grpo-dist0001", owner="local"):
    return run_store.create_run(
        db, run_id=run_id, algorithm="grpo", config={}, status=RunStatus.RUNNING, owner=owner
    ).id


def test_the_poll_reads_new_distributions_once_and_only_the_viewers(db):
    rid = make_run(db)
    theirs = make_run(db, "grpo-other001", owner="user:bob")
    view = RunView()
    assert poll(db, view, rid).changed_distributions == set()
    add_distributions(db, rid, 1, {m.DIST_REWARD: [0.0, 1.0], m.DIST_LENGTH: [5, 9]})
    with MetricWriter(db, rid) as writer:  # the step's metrics move the run on
        writer.log(1, {"reward/total": 0.5})
    assert poll(db, view).changed_distributions == {m.DIST_REWARD, m.DIST_LENGTH}
    assert view.distributions.by_name[m.DIST_LENGTH].values == [(5.0, 9.0)]
    assert poll(db, view).changed_distributions == set()  # read once
    add_distributions(db, theirs, 1, {m.DIST_REWARD: [1.0]})
    other = RunView()
    assert poll(db, other, theirs, owner="local").changed_distributions == set()
    assert other.distributions.by_name == {}  # another owner's run reads as none


def test_a_resumed_step_replaces_the_tail_and_a_long_run_stays_bounded():
    series = StepValues()
    for step in (1, 2, 3):
        series.add(step, 2, [step, step + 1])
    series.add(2, 2, [7, 8])  # resumed from step 1
    assert series.steps == [1, 2] and series.values[-1] == (7.0, 8.0)
    series.add(3, 200, range(200))
    assert len(series.values[-1]) == KEPT_VALUES  # each value stands for 200/64 completions
    for step in range(4, 2000):
        series.add(step, 1, [0.0])
    assert len(series) <= MAX_STEPS and series.steps[-1] == 1999
    assert series.steps == sorted(series.steps)


def test_bins_span_the_values_and_whole_numbers_get_whole_bins():
    assert bins_for([3, 7]) == Bins(2.5, 1.0, 5)  # one bin per token count
    wide = bins_for([0, 95])
    assert wide.count * wide.width >= 96 and wide.count <= 24 and wide.width == 4.0
    floats = bins_for([-1.0, 0.5])
    assert floats.index(-1.0) == 0 and floats.index(0.5) == floats.count - 1
    assert bins_for([0.5, 0.5]).count == 1


def test_each_kept_value_weighs_its_share_of_the_batch():
    series = StepValues()
    series.add(1, 4, [0.0, 0.0, 0.0, 1.0])
    series.add(2, 100, [0.0, 1.0])  # 100 completions kept as two values: 50 each
    z = counts(series, Bins(-0.5, 1.0, 2))
    assert z == [[3.0, 50.0], [1.0, 50.0]]
    assert counts(StepValues([1], [2], [(0.0, 0.0)]), Bins(-0.5, 1.0, 2)) == [[2.0], [None]]
    assert median((1.0, 2.0, 10.0)) == 2.0 and median((1.0, 3.0)) == 2.0


def history(rows: dict[str, list[list[float]]]) -> DistributionHistory:
    h = DistributionHistory()
    for name, steps in rows.items():
        for step, values in enumerate(steps, start=1):
            h.by_name.setdefault(name, StepValues()).add(step, len(values), values)
    return h


def test_the_heat_map_has_a_column_per_step_and_the_median_on_top():
    h = history({m.DIST_REWARD: [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]})
    fig = distribution_figure(h, "total reward", "r1")
    heat, line = fig["data"]
    assert heat["type"] == "heatmap" and heat["x"] == [1, 2]
    assert sum(row[0] or 0 for row in heat["z"]) == 3  # every completion of step 1 in a bin
    assert line["y"] == [0.0, 1.0] and line["name"] == "median"
    assert distribution_figure(h, "advantage") is None  # none recorded
    assert distribution_figure(DistributionHistory(), "total reward") is None


def test_right_vs_wrong_lengths_are_two_panels_on_one_scale_with_both_medians():
    h = history(
        {m.DIST_LENGTH_CORRECT: [[10, 12], [11, 12]], m.DIST_LENGTH_WRONG: [[20, 40], [60, 80]]}
    )
    fig = distribution_figure(h, "length: right vs wrong", "r1")
    heats = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert [t["yaxis"] for t in heats] == ["y", "y2"]
    medians = [(t["name"], t["yaxis"], t["y"]) for t in fig["data"] if t["type"] == "scatter"]
    assert ("median, wrong", "y", [30.0, 70.0]) in medians  # wrong's median over right's panel
    assert ("median, right", "y2", [11.0, 11.5]) in medians
    layout = fig["layout"]
    assert layout["yaxis"]["range"] == layout["yaxis2"]["range"]  # one scale for both


def sample(group: int, total: float | None, *, raw: float | None = None, tokens=None) -> Sample:
    trace = [] if raw is None else [{"name": "correctness", "component": "correctness", "raw": raw}]
    return Sample(
        run_id="r", step=1, group=group, prompt="p", completion="c", total=total, trace=trace,
        time=0.0, tokens=tokens,
    )  # fmt: skip


def test_group_spread_is_trls_and_a_flat_group_is_flagged():
    rows = [sample(0, 1.0), sample(0, 1.0), sample(1, 0.0), sample(1, 1.5), sample(1, None)]
    flat, mixed = g.group_spreads(rows)
    assert flat.zero_variance and flat.std == 0.0
    assert not mixed.zero_variance and mixed.std == pytest.approx(statistics.stdev([0.0, 1.5]))
    assert mixed.row() == [1, 3, "0.75", "1.06", "0", "1.5", ""]
    assert flat.row()[-1] == "zero variance: teaches nothing"
    assert not g.GroupSpread(2, 1, (1.0,)).zero_variance  # one score has no spread
    note = g.groups_note(rows, len(rows), g.SHOW_ALL)
    assert note.startswith("2 groups stored at this step, **1 with zero variance**")


def test_the_filters_keep_flat_groups_wrong_answers_or_truncated_completions():
    rows = [
        sample(0, 1.0, raw=1.0, tokens=96),
        sample(0, 1.0, raw=1.0, tokens=40),
        sample(1, 0.0, raw=0.0, tokens=96),
        sample(1, 1.0, raw=1.0, tokens=None),
    ]
    assert g.shown_samples(rows, g.SHOW_ZERO_VARIANCE) == rows[:2]
    assert g.shown_samples(rows, g.SHOW_WRONG) == [rows[2]]
    assert g.shown_samples(rows, g.SHOW_TRUNCATED, 96) == [rows[0], rows[2]]
    assert g.shown_samples(rows, g.SHOW_TRUNCATED, None) == []  # the limit is not known
    assert g.shown_samples(rows, g.SHOW_ALL) == rows
    no_correctness = [sample(0, 1.0), sample(0, 0.0)]
    note = g.groups_note(no_correctness, 0, g.SHOW_WRONG)
    assert note.endswith("This reward has no correctness component to call an answer wrong.")
