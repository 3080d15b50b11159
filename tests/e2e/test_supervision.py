"""The app's supervisor thread and an app restart, with real worker processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from run_waits import wait_for

from engine.config.run_config import RunConfig
from engine.run.launcher import Launcher
from engine.run.saved_models import recorded_config
from storage import runs as run_store
from storage.paths import db_path
from storage.records.logs import logs_since
from storage.sqlite.db import Database
from storage.sqlite.schema import TERMINAL_STATUSES, RunStatus
from ui.shared.context import AppContext


@pytest.fixture
def contexts(data_dir):
    """``make()``: a new AppContext (an app start); every one is closed, no worker is left."""
    made: list[AppContext] = []

    def make() -> AppContext:
        made.append(AppContext(data_dir))
        return made[-1]

    yield make
    for ctx in made:
        ctx.close()
    with Database(db_path(data_dir)) as db:
        for run in run_store.list_runs(db, statuses=[RunStatus.RUNNING]):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)


def test_the_supervisor_marks_a_lost_run_and_starts_the_queued_one(data_dir, contexts):
    launcher = Launcher(data_dir)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lost = launcher.record(RunConfig.from_dict({"name": "lost"}), pid=dead.pid)
    queued = launcher.record(RunConfig.from_dict({"name": "queued"}))
    config = recorded_config(data_dir, queued)
    config.model.name_or_path = str(data_dir / "no-such-model")  # its worker ends quickly
    with Database(db_path(data_dir)) as db:
        run_store.update_run(db, queued, config=config.to_dict())

    contexts().start_supervisor(interval_s=0.2)  # one run at a time: the lost one holds the slot
    assert wait_for(data_dir, lost, lambda r: r.status == RunStatus.INTERRUPTED)
    run = wait_for(data_dir, queued, lambda r: r.status in TERMINAL_STATUSES)
    assert run.status == RunStatus.FAILED and "no-such-model" in run.error_message
    with Database(db_path(data_dir)) as db:  # a real worker process took the run
        assert any("Loading model" in line.message for line in logs_since(db, queued)[0])


@pytest.mark.slow
def test_a_restarted_app_reattaches_to_a_run_that_kept_training(data_dir, contexts):
    first = contexts()
    run_id = first.start_run(
        RunConfig.from_dict(
            {
                "generation": {"num_generations": 4, "max_completion_length": 16},
                "training": {"steps": 400, "prompts_per_step": 2, "eval_samples": 0},
            }
        )
    )
    wait_for(data_dir, run_id, lambda r: r.last_step >= 1)
    first.close()  # the app goes down; its worker lives on in its own session

    second = contexts()
    second.start_supervisor(interval_s=0.2)
    seen = wait_for(data_dir, run_id, lambda r: r.last_step >= 1).last_step
    time.sleep(1.0)  # several supervisor rounds: a live worker is not marked lost
    run = wait_for(data_dir, run_id, lambda r: r.last_step > seen)
    assert run.status == RunStatus.RUNNING
    second.launcher.stop(run_id)  # the new app controls the run it did not start
    run = wait_for(data_dir, run_id, lambda r: r.status in TERMINAL_STATUSES)
    assert run.status == RunStatus.STOPPED, run.error_traceback
