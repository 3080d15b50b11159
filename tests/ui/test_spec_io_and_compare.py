import json
import re
from pathlib import Path

import pytest
import yaml

from rewards.errors import RewardSpecError
from rewards.spec import preset
from storage import runs as run_store
from storage.paths import db_path
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database
from ui.compare.tab import comparison, config_diff, flatten, read_runs, summary_markdown
from ui.design import spec_io
from ui.plots import charts


def test_spec_text_round_trips_in_both_formats():
    spec = preset("concise answers")
    for fmt in spec_io.FORMATS:
        assert spec_io.parse_spec(spec_io.spec_text(spec, fmt)).to_dict() == spec.to_dict()


def test_a_whole_run_config_imports_its_reward():
    text = yaml.safe_dump({"algorithm": "grpo", "reward": preset("format only").to_dict()})
    assert [c.name for c in spec_io.parse_spec(text).components] == ["format"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1, 2", "not valid JSON or YAML"),
        ("- a\n- b\n", "mapping"),
        ('{"components": [{"name": "magic"}]}', "unknown component 'magic'"),
    ],
)
def test_bad_imports_say_what_is_wrong(text, words):
    with pytest.raises(RewardSpecError, match=words):
        spec_io.parse_spec(text)


def test_non_utf8_file_is_refused(tmp_path):
    path = tmp_path / "spec.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(RewardSpecError, match="not UTF-8"):
        spec_io.read_spec_file(path)


def test_export_files_include_a_standalone_trl_module():
    paths = [Path(p) for p in spec_io.export_files(preset("R1-style math"))]
    assert [p.name for p in paths] == ["reward_spec.json", "reward_spec.yaml", "reward_module.py"]
    assert json.loads(paths[0].read_text())["components"][0]["name"] == "correctness"
    source = paths[2].read_text()
    compile(source, "reward_module.py", "exec")
    assert "reward_funcs" in source and "from rewards" not in source and "import ui" not in source


def test_flatten_and_diff_show_only_differing_fields():
    a = {"training": {"steps": 3, "lr": 0.1}, "reward": {"components": [{"weight": 1.0}]}}
    b = {"training": {"steps": 5, "lr": 0.1}, "reward": {"components": [{"weight": 2.0}]}}
    assert flatten(a)["reward.components[0].weight"] == 1.0
    headers, rows = config_diff({"r1": a, "r2": b})
    assert headers == ["field", "r1", "r2"]
    assert rows == [["reward.components[0].weight", "1.0", "2.0"], ["training.steps", "3", "5"]]


def test_compare_overlays_one_metric_of_several_runs(data_dir):
    with Database(db_path(data_dir)) as db:
        ids = []
        for i, steps in enumerate((3, 5)):
            run = run_store.create_run(
                db, algorithm="grpo", name=f"run {i}", config={"training": {"steps": steps}}
            )
            with MetricWriter(db, run.id) as writer:
                for step in range(1, steps + 1):
                    writer.log(step, {"reward/total": step / 10, "loss/policy": 0.0})
            ids.append(run.id)
        c = comparison(db, ids, None)
    assert c.names == ["loss/policy", "reward/total"]
    assert c.chosen == ["reward/total"]  # the default metric when none is picked
    assert [t["name"] for t in c.figure["data"]] == ["run 0", "run 1"]
    assert [len(t["x"]) for t in c.figure["data"]] == [3, 5]
    assert c.rows == [["training.steps", "3", "5"]]
    assert c.headers[1:] == ids


def test_compare_draws_several_metrics_and_summarises_each_run(data_dir):
    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(db, algorithm="grpo", name="evaluated", config={})
        with MetricWriter(db, run.id) as writer:
            writer.log(0, {"eval/accuracy": 0.3})
            for step in (1, 2):
                writer.log(step, {"reward/total": step / 10, "loss/policy": 0.0})
            writer.log(2, {"eval/accuracy": 0.4})
        c = comparison(db, [run.id], ["loss/policy", "reward/total", "nope"])
        figure, chosen = c.figure, c.chosen
        summary = summary_markdown(db, read_runs(db, [run.id, "missing"]))
    assert chosen == ["loss/policy", "reward/total"]  # unknown names are dropped
    assert [t["yaxis"] for t in figure["data"]] == ["y", "y2"]  # one panel per metric
    assert figure["layout"]["yaxis2"]["title"]["text"] == "reward/total"
    assert [t["showlegend"] for t in figure["data"]] == [True, False]  # one legend entry a run
    # The line as the page shows it (escape() backslash-escapes Markdown punctuation).
    assert (
        re.sub(r"\\(.)", r"\1", summary)
        == "- **evaluated**: held-out accuracy 30.0% → 40.0% (best 40.0% at step 2) · 2 steps"
    )


def test_compare_by_relative_time_starts_each_run_at_its_own_zero(data_dir):
    from ui.plots.charts import ChartOptions

    start = 1_800_000_000.0
    with Database(db_path(data_dir)) as db:
        ids = []
        for i, (offset, minutes_a_step) in enumerate(((0.0, 1.0), (86_400.0, 2.0))):
            run = run_store.create_run(db, algorithm="grpo", name=f"run {i}", config={})
            with MetricWriter(db, run.id) as writer:
                for step in (1, 2, 3):
                    at = start + offset + 60.0 * minutes_a_step * (step - 1)
                    writer.log(step, {"reward/total": step / 10, "loss/policy": 0.1}, at=at)
            ids.append(run.id)
        by_time = comparison(db, ids, ["reward/total"], options=ChartOptions(x="time"))
        two_panels = comparison(
            db, ids, ["reward/total", "loss/policy"], options=ChartOptions(x="time")
        )
        by_step = comparison(db, ids, ["reward/total"])
    assert [t["x"] for t in by_time.figure["data"]] == [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]]
    assert by_time.figure["layout"]["xaxis"]["title"]["text"] == "minutes since the first point"
    assert [t["x"] for t in two_panels.figure["data"]] == [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]] * 2
    assert [t["x"] for t in by_step.figure["data"]] == [[1, 2, 3], [1, 2, 3]]


def test_compare_reads_each_run_once(data_dir, monkeypatch):
    with Database(db_path(data_dir)) as db:
        ids = [run_store.create_run(db, algorithm="grpo", name=n, config={}).id for n in "ab"]
        expected_summary = summary_markdown(db, read_runs(db, ids), charts.run_colors(ids))
        reads: list[str] = []
        real_get_run = run_store.get_run

        def counted(db, run_id, **kwargs):
            reads.append(run_id)
            return real_get_run(db, run_id, **kwargs)

        monkeypatch.setattr(run_store, "get_run", counted)
        result = comparison(db, [*ids, ids[0], "missing"], None)
    assert sorted(reads) == sorted([*ids, "missing"])  # once each, a repeat not read again
    assert result.summary == expected_summary
    assert result.headers == ["field", *ids]


def test_compare_gives_each_run_one_colour_in_every_panel_and_its_summary_line(data_dir):
    with Database(db_path(data_dir)) as db:
        ids = []
        for name in ("first", "second"):
            run = run_store.create_run(db, algorithm="grpo", name=name, config={})
            with MetricWriter(db, run.id) as writer:
                writer.log(1, {"reward/total": 0.1, "loss/policy": 0.2})
            ids.append(run.id)
        # The second run alone has a metric: it keeps its colour, not the first one's.
        with MetricWriter(db, ids[1]) as writer:
            writer.log(1, {"policy/kl": 0.01})
        both = comparison(db, ids, ["policy/kl", "reward/total"])
        smoothed = comparison(
            db, ids, ["policy/kl", "reward/total"], options=charts.ChartOptions(smoothing=0.5)
        )
    colors = charts.run_colors(ids)
    kl = [t for t in both.figure["data"] if t["yaxis"] == "y" and t["x"]]
    assert [t["line"]["color"] for t in kl] == [colors[ids[1]]]
    assert [t["line"]["color"] for t in both.figure["data"] if t["yaxis"] == "y2"] == [
        colors[ids[0]],
        colors[ids[1]],
    ]
    lines = both.summary.split("\n")
    assert all(f'color:{colors[rid]}">●' in line for rid, line in zip(ids, lines, strict=True))
    # Smoothing in Compare too (the window's band, the faint raw line, the smoothed line), and
    # a smoothing change keeps the zoom (same uirevision).
    first_run = smoothed.figure["data"][:4]
    assert [t.get("fill") for t in first_run] == [None, "tonexty", None, None]
    assert [t.get("opacity") for t in first_run] == [None, None, 0.25, None]
    assert smoothed.figure["layout"]["uirevision"] == both.figure["layout"]["uirevision"]
