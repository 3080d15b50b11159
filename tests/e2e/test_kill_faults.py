"""kill -9 of real workers, then resume: nothing committed is lost, nothing is doubled.

The same trials as ``bench/kill_faults.py`` (50+ there), a few here: before the first
checkpoint, while a checkpoint is being written, right after one is published, and while an
async run's worker samples the next step.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time

import pytest

from bench.kill_faults import KILL_FIGURES, integrity, kill_trial, summary, tiny_config
from engine.run.launcher import Launcher
from engine.runtime.checkpoints import latest_checkpoint
from storage import runs as run_store
from storage.paths import db_path
from storage.records import samples as sample_store
from storage.records.metrics import metrics_since
from storage.sqlite.db import Database
from storage.sqlite.schema import TERMINAL_STATUSES, RunStatus

pytestmark = pytest.mark.slow


@pytest.mark.reliability
def test_kill_9_at_varied_moments_then_resume_loses_and_doubles_nothing(data_dir, record_property):
    moments = ["before_first_checkpoint", "during_save", "after_publish", "mid_overlap"]
    trials = [kill_trial(data_dir, "grpo", m, random.Random(i)) for i, m in enumerate(moments)]
    figures = summary(trials)
    for name in KILL_FIGURES:
        record_property(name, figures[name])
    assert figures["kill_faults"] == len(moments), trials  # every worker died mid-run
    assert [t for t in trials if not t.ok] == []


def wait_for(db, run_id, predicate, timeout=240.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = run_store.get_run(db, run_id)
        if predicate(run):
            return run
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting on run {run_id}: {run}")


def test_a_half_written_checkpoint_is_skipped_and_the_run_completes(data_dir):
    """What a kill 7 ms into a save left before saves were staged (issue 11, R2)."""
    launcher = Launcher(data_dir)
    run_id = launcher.start(tiny_config("grpo", "after_publish"))
    run_dir = launcher.run_dir(run_id)
    with Database(db_path(data_dir)) as db:
        try:
            wait_for(db, run_id, lambda r: latest_checkpoint(run_dir) is not None)
            os.killpg(run_store.get_run(db, run_id).pid, signal.SIGKILL)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run_store.get_run(db, run_id).pid, signal.SIGKILL)
        wait_for(db, run_id, lambda r: run_id in launcher.scan() or r.status != RunStatus.RUNNING)
        resumed_from = latest_checkpoint(run_dir).name
        half = run_dir / "checkpoint-6"
        half.mkdir(exist_ok=True)
        (half / "model.safetensors").write_bytes(b"\0" * 100)  # no trainer_state.json
        launcher.resume(run_id)
        run = wait_for(db, run_id, lambda r: r.status in TERMINAL_STATUSES)
        assert run.status == RunStatus.COMPLETED, run.error_traceback
        assert f"Resuming from {resumed_from}" in (run_dir / "worker.log").read_text()
        rows, _ = metrics_since(db, run_id, limit=100_000)
        assert [r.step for r in rows if r.name == "reward/total"] == [1, 2, 3, 4, 5, 6]
        assert sample_store.sample_steps(db, run_id) == [1, 2, 3, 4, 5, 6]
    assert integrity(db_path(data_dir)) == "ok"
