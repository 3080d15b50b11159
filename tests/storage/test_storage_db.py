"""The database file: pragmas, schema creation and version checks, migrations, lock handling."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading

import pytest
from sqlalchemy import text

from storage.progress import latest_steps
from storage.records.metrics import MetricWriter, metrics_since
from storage.runs import create_run, get_run
from storage.sqlite import migrations, schema
from storage.sqlite.db import Database, DatabaseLockedError, SchemaVersionError, StorageError


def pragma(db: Database, name: str):
    return db.read(lambda s: s.execute(text(f"PRAGMA {name}")).scalar())


def test_every_connection_gets_the_pragmas(db):
    assert pragma(db, "journal_mode") == "wal"
    assert pragma(db, "synchronous") == 1  # NORMAL
    assert pragma(db, "foreign_keys") == 1
    assert pragma(db, "busy_timeout") == 10_000


def test_new_file_gets_tables_and_version_row(db):
    names = db.read(
        lambda s: set(
            s.execute(text("SELECT name FROM sqlite_master WHERE type='table'")).scalars()
        )
    )
    assert {"run", "metric", "sample", "log_line", "schema_version"} <= names
    assert db.schema_version == schema.SCHEMA_VERSION
    versions = db.read(lambda s: s.execute(text("SELECT version FROM schema_version")).all())
    assert versions == [(schema.SCHEMA_VERSION,)]


def test_reopening_keeps_data(data_dir):
    path = data_dir / "studio.db"
    with Database(path) as db:
        create_run(db, algorithm="grpo", config={"lr": 1e-5}, run_id="grpo-keep")
    with Database(path) as db:
        assert get_run(db, "grpo-keep").config == {"lr": 1e-5}
        versions = db.read(
            lambda s: s.execute(text("SELECT COUNT(*) FROM schema_version")).scalar()
        )
        assert versions == 1


def test_newer_schema_version_is_refused(data_dir):
    path = data_dir / "studio.db"
    Database(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (schema.SCHEMA_VERSION + 1,))
    newer, ours = schema.SCHEMA_VERSION + 1, schema.SCHEMA_VERSION
    expected = rf"schema version {newer}, newer than .*\({ours}\)"
    with pytest.raises(SchemaVersionError, match=expected):
        Database(path)


def test_a_foreign_sqlite_file_is_refused(data_dir):
    path = data_dir / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(SchemaVersionError, match="not a Reward Studio database"):
        Database(path)


def test_older_version_runs_numbered_migrations(data_dir, monkeypatch):
    path = data_dir / "studio.db"
    with Database(path) as db:
        create_run(db, algorithm="grpo", config={}, run_id="grpo-old")

    def add_seed(conn):
        conn.exec_driver_sql("ALTER TABLE run ADD COLUMN seed INTEGER DEFAULT 7")

    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)
    monkeypatch.setattr(migrations, "MIGRATIONS", {current: add_seed})
    with Database(path) as db:
        assert db.schema_version == current + 1
        assert db.read(lambda s: s.execute(text("SELECT seed FROM run")).scalar()) == 7
        assert db.read(lambda s: s.execute(text("SELECT version FROM schema_version")).all()) == [
            (current + 1,)
        ]
    # Opening again runs nothing: the version row says the file is current.
    monkeypatch.setattr(migrations, "MIGRATIONS", {})
    with Database(path) as db:
        assert db.schema_version == current + 1


def test_a_missing_migration_step_is_an_error_and_changes_nothing(data_dir, monkeypatch):
    path = data_dir / "studio.db"
    Database(path).close()
    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 2)
    monkeypatch.setattr(migrations, "MIGRATIONS", {current: lambda conn: None})
    with pytest.raises(
        RuntimeError, match=f"no migration from schema version {current + 1} to {current + 2}"
    ):
        Database(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(current,)]


def test_memory_paths_and_bad_settings_are_refused(data_dir):
    with pytest.raises(ValueError, match="path"):
        Database(":memory:")
    with pytest.raises(ValueError, match="busy_timeout_s"):
        Database(data_dir / "x.db", busy_timeout_s=0)


def test_closed_database_refuses_work(data_dir):
    db = Database(data_dir / "studio.db")
    db.close()
    db.close()  # twice is fine
    assert db.closed
    with pytest.raises(StorageError, match="closed"):
        get_run(db, "any")


def test_locked_beyond_every_retry_raises_database_locked(data_dir, caplog, hold_write_lock):
    db = Database(data_dir / "studio.db", busy_timeout_s=0.1, lock_retries=1)
    holder = hold_write_lock(db.path, 1.0)
    try:
        with pytest.raises(DatabaseLockedError, match="database is locked"):
            create_run(db, algorithm="grpo", config={})
    finally:
        holder.join()
        db.close()
    assert "retrying" in caplog.text


def test_a_write_retries_until_the_lock_is_free(data_dir, caplog, hold_write_lock):
    caplog.set_level(logging.WARNING, logger="storage.sqlite.db")
    db = Database(data_dir / "studio.db", busy_timeout_s=0.1, lock_retries=8)
    holder = hold_write_lock(db.path, 0.4)
    try:
        run = create_run(db, algorithm="grpo", config={})
    finally:
        holder.join()
    assert get_run(db, run.id) is not None
    assert "database is locked" in caplog.text
    db.close()


def test_readers_are_not_blocked_by_a_writer(data_dir, hold_write_lock):
    # With no patience at all for locks, a read still succeeds while another process writes.
    db = Database(data_dir / "studio.db", busy_timeout_s=0.01, lock_retries=0)
    create_run(db, algorithm="grpo", config={}, run_id="grpo-read")
    holder = hold_write_lock(db.path, 1.0)
    try:
        assert get_run(db, "grpo-read") is not None
        with pytest.raises(DatabaseLockedError):
            create_run(db, algorithm="grpo", config={})
    finally:
        holder.join()
        db.close()


def test_one_database_serves_many_threads(db):
    # Gradio runs handlers in a thread pool; they all share the app's Database.
    run_ids = [create_run(db, algorithm="grpo", config={}).id for _ in range(8)]
    errors: list[BaseException] = []

    def work(run_id: str) -> None:
        try:
            with MetricWriter(db, run_id, flush_every=5) as writer:
                for step in range(1, 51):
                    writer.log(step, {"a": step})
                    metrics_since(db, run_id)
                    latest_steps(db)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(rid,)) for rid in run_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert latest_steps(db) == dict.fromkeys(run_ids, 50)
    assert all(len(metrics_since(db, rid)[0]) == 50 for rid in run_ids)


def driver_connection(db: Database) -> int:
    return db.read(lambda s: id(s.connection().connection.driver_connection))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_connections(db):
    # SQLite handles must not be used across fork(); the child gets a fresh pool.
    create_run(db, algorithm="grpo", config={}, run_id="grpo-parent")
    parents = driver_connection(db)  # the one pooled connection, open in the parent
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if driver_connection(db) == parents:
                code = 3
            else:
                create_run(db, algorithm="grpo", config={}, run_id="grpo-child")
                code = 0 if get_run(db, "grpo-parent") is not None else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert driver_connection(db) == parents  # the parent's pool is untouched
    assert get_run(db, "grpo-child") is not None
    assert pragma(db, "integrity_check") == "ok"
