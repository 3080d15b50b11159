"""Tags and a note per run: checked, bounded, owner-scoped, kept by old files after migration."""

import sqlite3

import pytest

from storage.labels import (
    MAX_NOTE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    LabelError,
    clean_tags,
    label_of,
    labels_of,
    set_label,
)
from storage.paths import db_path
from storage.runs import RunNotFoundError, create_run, delete_run, get_run
from storage.sqlite.db import Database
from storage.sqlite.schema import SCHEMA_VERSION


def test_tags_are_trimmed_deduplicated_and_bounded():
    assert clean_tags(" baseline,  lr  sweep ,Baseline,,") == ["baseline", "lr sweep"]
    assert clean_tags(None) == [] and clean_tags(["a", "b"]) == ["a", "b"]
    with pytest.raises(LabelError, match=f"tags: .*at most {MAX_TAG_CHARS}"):
        clean_tags("x" * (MAX_TAG_CHARS + 1))
    with pytest.raises(LabelError, match=f"tags: {MAX_TAGS + 1} tags; a run has at most"):
        clean_tags(",".join(f"t{i}" for i in range(MAX_TAGS + 1)))
    with pytest.raises(LabelError, match=r"tags: .*control character"):
        clean_tags("a\x00b")


def test_a_label_is_stored_replaced_and_deleted_with_its_run(db):
    create_run(db, algorithm="grpo", config={}, run_id="r1")
    create_run(db, algorithm="grpo", config={}, run_id="r2")
    assert label_of(db, "r1") is None
    set_label(db, "r1", tags="a, b", note="  first try <b>bold</b>  ")
    got = label_of(db, "r1")
    assert (got.tags, got.note) == (["a", "b"], "first try <b>bold</b>")  # stored as typed
    set_label(db, "r1", tags="", note="")
    assert (label_of(db, "r1").tags, label_of(db, "r1").note) == ([], "")
    set_label(db, "r2", tags="c", note=None)
    assert sorted(labels_of(db, ["r1", "r2", "nope"])) == ["r1", "r2"]
    many = [f"x{i}" for i in range(1200)] + ["r2"]  # read in batches of ids
    assert list(labels_of(db, many)) == ["r2"] and labels_of(db, []) == {}
    assert delete_run(db, "r1") and label_of(db, "r1") is None


def test_a_note_over_the_bound_is_refused_naming_the_field(db):
    create_run(db, algorithm="grpo", config={}, run_id="r1")
    with pytest.raises(LabelError, match=f"note: {MAX_NOTE_CHARS + 1:,} characters; a note has"):
        set_label(db, "r1", tags="", note="n" * (MAX_NOTE_CHARS + 1))
    assert label_of(db, "r1") is None


def test_only_the_owner_may_label_a_run(db):
    create_run(db, algorithm="grpo", config={}, run_id="r1", owner="user:alice")
    with pytest.raises(RunNotFoundError):
        set_label(db, "r1", tags="mine", note="", owner="user:bob")
    with pytest.raises(RunNotFoundError):
        set_label(db, "missing", tags="x", note="")
    assert label_of(db, "r1") is None
    set_label(db, "r1", tags="mine", note="", owner="user:alice")
    assert label_of(db, "r1").tags == ["mine"]


def test_a_version_3_database_gets_labels_and_attempt_times_and_keeps_its_runs(data_dir):
    path = db_path(data_dir)
    with Database(path) as db:
        create_run(db, algorithm="grpo", config={"a": 1}, run_id="old")
    with sqlite3.connect(path) as conn:  # back to what version 3 had
        conn.execute("DROP TABLE run_label")
        conn.execute("ALTER TABLE run DROP COLUMN earlier_attempts_s")
        conn.execute("DROP TABLE step_distribution")  # version 5's
        conn.execute("ALTER TABLE sample DROP COLUMN tokens")  # added in version 5
        conn.execute("UPDATE schema_version SET version = 3")
    with Database(path) as db:
        assert db.schema_version == SCHEMA_VERSION == 5
        assert label_of(db, "old") is None
        assert get_run(db, "old").earlier_attempts_s == 0.0  # never measured
        set_label(db, "old", tags="kept", note="from v3")
        assert label_of(db, "old").note == "from v3"
