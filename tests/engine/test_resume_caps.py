"""Resuming a run is starting one: the same caps on queued plus running runs, and the back of the
queue, so stop/resume cannot hold more slots than a user may or jump ahead of other visitors."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from engine.run.launcher import Launcher
from storage import runs as run_store
from storage.paths import db_path
from storage.run_caps import ActiveRunCaps
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from ui.access.identity import Viewer
from ui.runs import actions as run_actions

pytestmark = pytest.mark.reliability

CAPS = ActiveRunCaps(per_owner=2, anonymous_total=3)


def add_run(db: Database, run_id: str, owner: str, status: RunStatus, pid: int | None = None):
    run_store.create_run(
        db, run_id=run_id, algorithm="grpo", config={}, owner=owner, status=RunStatus.QUEUED
    )
    if status == RunStatus.RUNNING:
        run_store.update_run(db, run_id, status=status, pid=pid, started_at=time.time())
    elif status != RunStatus.QUEUED:
        run_store.set_status(db, run_id, status)
    time.sleep(0.01)  # distinct creation times: the queue's order is by time


def test_resume_keeps_the_caps_and_queues_at_the_back(data_dir, record_property):
    alice = Viewer("anon:alice", "anonymous visitor", caps=CAPS)
    carol = Viewer("anon:carol", "anonymous visitor", caps=CAPS)
    # A live process stands in for the one training run, which holds the only slot: nothing
    # queued starts while the test looks at the queue.
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
    )
    launcher = Launcher(data_dir, max_concurrent=1, gpus=lambda: [])
    try:
        with Database(db_path(data_dir)) as db:
            add_run(db, "alice-old", alice.owner, RunStatus.STOPPED)
            add_run(db, "carol-old", carol.owner, RunStatus.STOPPED)
            add_run(db, "alice-busy", alice.owner, RunStatus.RUNNING, pid=sleeper.pid)
            add_run(db, "alice-queued", alice.owner, RunStatus.QUEUED)
            add_run(db, "bob-queued", "anon:bob", RunStatus.QUEUED)
            refused = 0
            # Alice holds 2 (her cap): a resume is one run too many.
            with pytest.raises(run_actions.RunActionError, match=r"per user \(2\)"):
                run_actions.resume_run(db, launcher, alice, "alice-old")
            refused += 1
            run_store.set_status(db, "alice-queued", RunStatus.STOPPED)
            run_actions.resume_run(db, launcher, alice, "alice-old")  # now within her cap
            # It queues behind Bob's run, which was queued before the resume.
            assert run_store.next_queued(db).id == "bob-queued"
            # Anonymous visitors now hold 3 together: Carol's resume is refused.
            with pytest.raises(run_actions.RunActionError, match=r"anonymous visitors have 3"):
                run_actions.resume_run(db, launcher, carol, "carol-old")
            refused += 1
            statuses = {r.id: r.status for r in run_store.list_runs(db)}
            attempt = run_store.get_run(db, "alice-old").attempt
    finally:
        sleeper.kill()
        sleeper.wait()
    record_property("probes_tried", 2)
    record_property("probes_passed", refused)
    assert statuses["alice-old"] == RunStatus.QUEUED and attempt == 2  # a new attempt
    assert statuses["carol-old"] == RunStatus.STOPPED
