"""Run owners: stored with each run, filtered on read, and added to databases made before them."""

from __future__ import annotations

import sqlite3

import pytest

from storage.paths import db_path
from storage.progress import run_progress
from storage.run_caps import ActiveRunCaps, TooManyActiveRunsError, count_active
from storage.runs import create_run, get_run, list_runs, set_status
from storage.sqlite.db import Database
from storage.sqlite.schema import LOCAL_OWNER, SCHEMA_VERSION, RunStatus


def test_runs_are_listed_and_read_by_owner(db):
    create_run(db, algorithm="grpo", config={}, run_id="mine", owner="user:alice")
    create_run(db, algorithm="grpo", config={}, run_id="theirs", owner="user:bob")
    create_run(db, algorithm="grpo", config={}, run_id="cli")
    assert get_run(db, "mine", owner="user:alice").owner == "user:alice"
    assert get_run(db, "theirs", owner="user:alice") is None  # reads like a missing run
    assert get_run(db, "theirs").owner == "user:bob"  # no owner given: the engine's view
    assert get_run(db, "cli").owner == LOCAL_OWNER
    assert [r.id for r in list_runs(db, owner="user:alice")] == ["mine"]
    assert {r.id for r in list_runs(db)} == {"mine", "theirs", "cli"}
    assert set(run_progress(db, owner="user:bob")) == {"theirs"}


def test_active_runs_are_counted_per_owner(db):
    for i in range(3):
        create_run(db, algorithm="grpo", config={}, run_id=f"a{i}", owner="anon:s1")
    create_run(db, algorithm="grpo", config={}, run_id="b0", owner="anon:s2")
    set_status(db, "a0", RunStatus.STOPPED)
    assert count_active(db, "anon:s1") == 2
    assert count_active(db, "anon:s2") == 1
    assert count_active(db, "anon:s3") == 0


def test_a_database_from_before_owners_is_migrated_and_keeps_its_runs(data_dir):
    path = db_path(data_dir)
    with Database(path) as db:
        create_run(db, algorithm="grpo", config={"a": 1}, run_id="old-run", total_steps=5)
    # Turn the file back into a version 1 database: the run table as it was, without owners.
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE run_phase")  # version 3's
        conn.execute("DROP TABLE run_note")  # version 3's
        conn.execute("DROP INDEX ix_run_owner_created")
        conn.execute("ALTER TABLE run DROP COLUMN owner")
        conn.execute("ALTER TABLE run DROP COLUMN queued_at")  # added in version 3
        conn.execute("DROP TABLE run_label")  # version 4's
        conn.execute("ALTER TABLE run DROP COLUMN earlier_attempts_s")  # added in version 4
        conn.execute("DROP TABLE step_distribution")  # version 5's
        conn.execute("ALTER TABLE sample DROP COLUMN tokens")  # added in version 5
        conn.execute("UPDATE schema_version SET version = 1")
    with Database(path) as db:
        assert db.schema_version == SCHEMA_VERSION
        run = get_run(db, "old-run")
        assert (run.owner, run.config, run.total_steps) == (LOCAL_OWNER, {"a": 1}, 5)
        assert run.queued_at is None  # it queues by its creation time
        assert [r.id for r in list_runs(db, owner=LOCAL_OWNER)] == ["old-run"]
        create_run(db, algorithm="grpo", config={}, run_id="new-run", owner="hf:carol")
        assert [r.id for r in list_runs(db, owner="hf:carol")] == ["new-run"]


def test_a_run_over_an_active_cap_is_refused_naming_the_cap(db):
    caps = ActiveRunCaps(per_owner=2, anonymous_total=3)
    create_run(db, algorithm="grpo", config={}, run_id="q1", owner="anon:s1", caps=caps)
    create_run(db, algorithm="grpo", config={}, run_id="q2", owner="anon:s1", caps=caps)
    with pytest.raises(TooManyActiveRunsError, match=r"runs: .*per user \(2\)"):
        create_run(db, algorithm="grpo", config={}, run_id="q3", owner="anon:s1", caps=caps)
    assert get_run(db, "q3") is None
    create_run(db, algorithm="grpo", config={}, owner="anon:s2", caps=caps)  # another session
    with pytest.raises(TooManyActiveRunsError, match=r"anonymous visitors have 3 .*\(3\)"):
        create_run(db, algorithm="grpo", config={}, owner="anon:s3", caps=caps)
    create_run(db, algorithm="grpo", config={}, owner="user:alice", caps=caps)  # signed in: own cap
    create_run(db, algorithm="grpo", config={}, owner="user:anon:x", caps=caps)  # not anonymous
    set_status(db, "q1", RunStatus.STOPPED)
    create_run(db, algorithm="grpo", config={}, run_id="q3", owner="anon:s1", caps=caps)
