"""The Runs view's extra chart: any logged metric, picked by name, following the run's poll."""

from typing import NamedTuple

from storage import runs as run_store
from storage.paths import db_path
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from ui.plots import charts
from ui.runs.extra_chart import MAX_EXTRA, extra_figure, picked
from ui.runs.poll import poll
from ui.runs.state import RunView


class Point(NamedTuple):
    step: int
    name: str
    value: float


def test_the_poll_lists_the_runs_metric_names_when_they_change_and_what_moved(data_dir):
    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(db, algorithm="grpo", config={}, status=RunStatus.RUNNING)
        view = RunView()
        first = poll(db, view, run.id)
        with MetricWriter(db, run.id) as writer:
            writer.log(1, {"train/epoch": 0.1, "reward/total": 0.5})
        named = poll(db, view, run.id)
        with MetricWriter(db, run.id) as writer:
            writer.log(2, {"train/epoch": 0.2})
        moved = poll(db, view, run.id)
        quiet = poll(db, view, run.id)
    assert first.metric_names == []  # drawn anew: the picker starts empty
    assert named.metric_names == ["reward/total", "train/epoch"]
    assert moved.metric_names is None and moved.changed_metrics == {"train/epoch"}
    assert quiet.metric_names is None and quiet.changed_metrics == set()


def test_the_extra_chart_draws_the_picked_metrics_of_this_run_one_panel_each():
    view = RunView()
    view.select("grpo-1")
    view.absorb([Point(1, "train/epoch", 0.1), Point(1, "rewards/format/std", 0.2)], 2)
    assert extra_figure(view, []) is None
    assert extra_figure(view, ["from/another/run"]) is None
    assert picked(view, ["train/epoch", "nope", "train/epoch", 3]) == ["train/epoch"]
    assert len(picked(view, list(view.series) * MAX_EXTRA)) == 2
    figure = extra_figure(view, ["rewards/format/std", "train/epoch"], charts.ChartOptions())
    assert [t["yaxis"] for t in figure["data"]] == ["y", "y2"]
    assert figure["layout"]["yaxis"]["title"]["text"] == "format/std"
    assert figure["layout"]["yaxis2"]["title"]["text"] == "train/epoch"
    assert [t["y"] for t in figure["data"]] == [[0.2], [0.1]]
    assert "markers" in figure["data"][0]["mode"]  # one point shows as a point
