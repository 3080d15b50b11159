"""``training.report_to: [trackio]`` works out of the box and offline: a real one-step GRPO
worker logs into trackio's local database inside the run folder, never the Hub."""

from __future__ import annotations

import contextlib
import json
import sqlite3

import pytest
from run_waits import wait_for
from test_runs import FINAL, launcher, tiny_config  # noqa: F401

from engine.runtime.layout import run_dir, trackio_dir
from engine.tracking.trackers import TRACKIO_PROJECT
from storage.sqlite.schema import RunStatus

pytestmark = pytest.mark.slow


def test_a_run_reporting_to_trackio_logs_into_its_own_folder(launcher, data_dir, monkeypatch):  # noqa: F811
    # A Space id in the environment must not send the logs to the Hub.
    monkeypatch.setenv("TRACKIO_SPACE_ID", "someone/somewhere")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = tiny_config("grpo", steps=1, report_to=["trackio"], eval_samples=4)
    run_id = launcher.start(config)
    run = wait_for(data_dir, run_id, lambda r: r.status in FINAL)
    assert run.status == RunStatus.COMPLETED, run.error_traceback
    database = trackio_dir(run_dir(data_dir, run_id)) / f"{TRACKIO_PROJECT}.db"
    assert database.is_file(), sorted(p.name for p in run_dir(data_dir, run_id).rglob("*"))
    with contextlib.closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT run_name, metrics, space_id FROM metrics").fetchall()
    logged = [json.loads(metrics) for _, metrics, _ in rows]
    assert {name for name, _, _ in rows} == {config.name}
    assert any("train/loss" in m and "train/reward" in m for m in logged), logged
    assert all(space is None for _, _, space in rows)  # nothing waits to go to a Space
