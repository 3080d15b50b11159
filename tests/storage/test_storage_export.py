"""Exporting a run: metrics as a step-by-metric CSV, samples with traces and distributions as JSONL,
logs, config."""

from __future__ import annotations

import csv
import json

import yaml

from storage.export import export_run
from storage.labels import set_label
from storage.records.distributions import add_distributions
from storage.records.logs import append_logs
from storage.records.metrics import MetricWriter
from storage.records.samples import add_samples
from storage.runs import create_run
from storage.sqlite.schema import RunStatus

CONFIG = {"algorithm": "ppo", "training": {"steps": 3}}


def recorded_run(db) -> str:
    run = create_run(db, algorithm="ppo", config=CONFIG, name="exported", total_steps=3)
    with MetricWriter(db, run.id) as writer:
        for step in (1, 2, 3):
            writer.log(step, {"reward/total": step / 10, "loss/value": 1.0 / step})
        writer.log(3, {"eval/accuracy": 0.5, "loss/policy": float("nan")})
    trace = [{"name": "correctness", "raw": 1.0, "weight": 1.0, "contribution": 1.0}]
    add_samples(
        db, run.id, 2, [{"prompt": "2+2?", "completion": "4", "total": 1.0, "trace": trace}]
    )
    add_samples(db, run.id, 3, [{"prompt": "3+3?", "completion": "é6", "total": 0.0, "value": 0.2}])
    add_distributions(db, run.id, 3, {"dist/reward": [0.0, 1.0, 1.0]})
    append_logs(db, run.id, [(0.0, "INFO", "Loading model default")])
    return run.id


def test_a_run_exports_to_plain_files(db, tmp_path):
    run_id = recorded_run(db)
    out = export_run(db, run_id, tmp_path / "export")

    with (out / "metrics.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    assert list(rows[0]) == [
        "step",
        "time",
        "eval/accuracy",
        "loss/policy",
        "loss/value",
        "reward/total",
    ]
    assert float(rows[2]["reward/total"]) == 0.3 and float(rows[1]["loss/value"]) == 0.5
    assert rows[0]["eval/accuracy"] == "" and rows[2]["loss/policy"] == ""  # not logged; NaN

    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text("utf-8").splitlines()]
    assert [(s["step"], s["completion"]) for s in samples] == [(2, "4"), (3, "é6")]
    assert samples[0]["trace"][0]["name"] == "correctness" and samples[1]["value"] == 0.2

    (dist,) = [json.loads(line) for line in (out / "distributions.jsonl").read_text().splitlines()]
    assert dist == {"step": 3, "name": "dist/reward", "count": 3, "values": [0.0, 1.0, 1.0]}

    info = json.loads((out / "run.json").read_text("utf-8"))
    assert info["id"] == run_id and info["name"] == "exported" and info["status"] == "queued"
    assert (info["tags"], info["note"]) == ([], "")  # none written yet
    assert yaml.safe_load((out / "config.yaml").read_text("utf-8")) == CONFIG
    assert (out / "logs.txt").read_text(
        "utf-8"
    ) == "1970-01-01 00:00:00 INFO Loading model default\n"


def test_the_cli_exports_a_run_and_names_what_is_missing(db, data_dir, tmp_path, engine_cli):
    run_id = recorded_run(db)
    db.close()

    def cli(*args):
        return engine_cli("export", *args, "--data-dir", data_dir)

    done = cli(run_id, str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "metrics.csv").is_file()
    no_model = cli(run_id, str(tmp_path / "with-model"), "--model")
    assert no_model.returncode == 2
    assert f"run {run_id} has no final model or checkpoint" in no_model.stderr
    unknown = cli("nope", str(tmp_path / "x"))
    assert unknown.returncode == 2 and "no run with id 'nope'" in unknown.stderr
    assert "Traceback" not in no_model.stderr + unknown.stderr


def test_a_failed_run_keeps_its_error(db, tmp_path):
    from storage.runs import set_status

    run_id = recorded_run(db)
    set_status(db, run_id, RunStatus.FAILED, error="ValueError: boom", traceback="Traceback...")
    set_label(db, run_id, tags="oom, retry", note="failed at step 3")
    info = json.loads((export_run(db, run_id, tmp_path / "e") / "run.json").read_text("utf-8"))
    assert info["status"] == "failed" and info["error_message"] == "ValueError: boom"
    assert (info["tags"], info["note"]) == (["oom", "retry"], "failed at step 3")
