import pytest

from storage import runs as run_store
from storage.paths import db_path
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database
from ui.plots import charts, panels
from ui.plots.series import Series
from ui.runs.baseline import read_baseline, with_baseline


@pytest.fixture
def db(data_dir):
    with Database(db_path(data_dir)) as database:
        yield database


def _panel(key: str) -> panels.Panel:
    return next(p for p in panels.PANELS if p.key == key)


def test_the_baseline_is_drawn_dotted_under_the_runs_own_lines_on_its_axes():
    loss = _panel("loss")
    own = {"loss/policy": Series([1, 2], [0.1, 0.2]), "loss/value": Series([1, 2], [9.0, 8.0])}
    base = {"loss/policy": Series([1, 2, 3], [0.3, 0.2, 0.1]), "loss/value": Series([1], [5.0])}
    base["reward/total"] = Series([1], [0.5])  # another panel's: not drawn here
    figure = with_baseline(charts.panel_figure(loss, own), loss, base, "old run")
    names = [d["name"] for d in figure["data"]]
    assert names[:2] == ["loss/policy · baseline old run", "loss/value · baseline old run"]
    assert names[2:] == ["loss/policy", "loss/value"]  # the run's own, drawn over it
    first, second = figure["data"][:2]
    assert first["line"]["dash"] == "dot" and first.get("yaxis", "y") == "y"
    assert second["yaxis"] == "y2"  # the value loss's right axis, as the run's own
    assert first["y"] == [0.3, 0.2, 0.1]


def test_a_panel_the_baseline_lacks_is_unchanged_and_an_empty_one_drops_its_wait_note():
    entropy = _panel("entropy")
    figure = charts.panel_figure(entropy, {})
    assert with_baseline(figure, entropy, {"loss/policy": Series([1], [0.1])}, "b") is figure
    drawn = with_baseline(figure, entropy, {"policy/entropy": Series([1], [0.7])}, "b")
    assert drawn["layout"]["annotations"] == [] and len(drawn["data"]) == 1


def test_the_baseline_keeps_the_runs_other_notes_and_is_drawn_by_its_own_clock():
    from ui.plots.x_axes import Gap, RunClock

    loss = _panel("loss")
    own = {"loss/policy": Series([1, 2], [-0.1, -0.2], [100.0, 160.0])}
    clock = RunClock(40.0, False, (Gap(110.0, 130.0, 2, 1),))
    options = charts.ChartOptions(x="time", log_y=True)
    figure = charts.panel_figure(loss, own, options, "r", clock)
    base = {"loss/policy": Series([1], [0.3], [1000.0])}
    drawn = with_baseline(figure, loss, base, "b", options, RunClock(940.0, False))
    notes = [a["text"] for a in drawn["layout"]["annotations"]]
    assert notes[0].startswith("linear, not log") and notes[1] == "↻ attempt 2"
    assert drawn["data"][0]["x"] == [1.0]  # a minute after the baseline's own start


def test_a_baseline_is_read_whole_and_only_for_its_owner(db):
    run = run_store.create_run(db, algorithm="grpo", name="base", config={}, owner="alice")
    with MetricWriter(db, run.id) as writer:
        for step in (1, 2, 3):
            writer.log(step, {"reward/total": step / 10})
    name, series, _ = read_baseline(db, run.id, "alice")
    assert name == "base" and series["reward/total"].values == [0.1, 0.2, 0.3]
    assert read_baseline(db, run.id, "bob") == ("", {}, None)
    assert read_baseline(db, None, "alice") == ("", {}, None)
