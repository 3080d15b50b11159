import sqlite3

import pytest

from storage.paths import db_path
from storage.records.notes import add_note, notes_of_run
from storage.runs import RunNotFoundError, create_run, delete_run
from storage.sqlite.db import Database
from storage.sqlite.schema import SCHEMA_VERSION, NoteKind


def test_notes_are_typed_rows_read_in_order_and_deleted_with_their_run(db):
    create_run(db, algorithm="grpo", config={}, run_id="r1")
    add_note(db, "r1", 3, NoteKind.CONSTANT_COMPONENT, "format paid 0", {"name": "format"})
    add_note(db, "r1", 5, NoteKind.OUT_OF_MEMORY_RETRY, "retried", {"micro_batch": 32})
    notes = notes_of_run(db, "r1")
    assert [(n.step, n.kind, n.message) for n in notes] == [
        (3, "constant_component", "format paid 0"),
        (5, "out_of_memory_retry", "retried"),
    ]
    assert notes[1].detail == {"micro_batch": 32}
    with pytest.raises(ValueError, match="kind must be one of"):
        add_note(db, "r1", 1, "constant_component", "x")  # type: ignore[arg-type]
    with pytest.raises(RunNotFoundError):
        add_note(db, "nope", 1, NoteKind.CONSTANT_COMPONENT, "x")
    assert delete_run(db, "r1") and notes_of_run(db, "r1") == []


def test_a_version_2_database_gets_the_notes_table(data_dir):
    path = db_path(data_dir)
    with Database(path) as db:
        create_run(db, algorithm="grpo", config={}, run_id="old")
    with sqlite3.connect(path) as conn:  # back to what version 2 had
        for table in ("run_note", "run_phase", "run_label"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("ALTER TABLE run DROP COLUMN queued_at")
        conn.execute("ALTER TABLE run DROP COLUMN earlier_attempts_s")
        conn.execute("DROP TABLE step_distribution")  # version 5's
        conn.execute("ALTER TABLE sample DROP COLUMN tokens")  # added in version 5
        conn.execute("UPDATE schema_version SET version = 2")
    with Database(path) as db:
        assert db.schema_version == SCHEMA_VERSION == 5
        add_note(db, "old", 1, NoteKind.CONSTANT_COMPONENT, "kept")
        assert [n.message for n in notes_of_run(db, "old")] == ["kept"]
