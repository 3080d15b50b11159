"""The table models are the row types, their JSON and status columns keep the v2 file format (v3
adds the phase table, v5 the distributions), and the shared queries (skip-scan of distinct
values) read through the indexes."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

import pytest
from sqlalchemy import text

from storage.paths import db_path
from storage.records.distributions import add_distributions, distributions_since
from storage.records.logs import append_logs, logs_since
from storage.records.metrics import MetricWriter, metric_names, metrics_since
from storage.records.phases import phases
from storage.records.samples import add_samples, sample_steps, samples_at
from storage.runs import create_run, get_run, list_runs, set_status, update_run
from storage.sqlite.db import Database
from storage.sqlite.queries import distinct_values, distinct_values_query
from storage.sqlite.schema import SCHEMA_VERSION, Metric, Run, RunStatus, Sample

# The tables and indexes of a schema version 3 file, as SQLite stores them (sqlite_master.sql).
V3_SCHEMA = {
    "run": (
        "CREATE TABLE run (\n\tid VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\talgorithm "
        "VARCHAR NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tconfig_json TEXT NOT NULL, \n\t"
        "created_at FLOAT NOT NULL, \n\tstarted_at FLOAT, \n\tended_at FLOAT, \n\tpid INTEGER, "
        "\n\theartbeat_at FLOAT, \n\tlast_step INTEGER NOT NULL, \n\ttotal_steps INTEGER, \n\t"
        "error_message TEXT, \n\terror_traceback TEXT, \n\toutput_dir VARCHAR, \n\tattempt "
        "INTEGER NOT NULL, \n\tqueued_at FLOAT, \n\towner VARCHAR NOT NULL, \n\tPRIMARY KEY "
        "(id)\n)"
    ),
    "metric": (
        "CREATE TABLE metric (\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \n\trun_id "
        "VARCHAR NOT NULL, \n\tstep INTEGER NOT NULL, \n\tname VARCHAR NOT NULL, \n\tvalue FLOAT,"
        " \n\ttime FLOAT NOT NULL, \n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE"
        "\n)"
    ),
    "sample": (
        "CREATE TABLE sample (\n\tid INTEGER NOT NULL, \n\trun_id VARCHAR NOT NULL, \n\tstep "
        'INTEGER NOT NULL, \n\tprompt_index INTEGER, \n\t"group" INTEGER, \n\tprompt TEXT NOT '
        "NULL, \n\tcompletion TEXT NOT NULL, \n\tanswer TEXT, \n\ttotal FLOAT, \n\ttrace_json "
        "TEXT NOT NULL, \n\tadvantage FLOAT, \n\tvalue FLOAT, \n\textra_json TEXT NOT NULL, \n\t"
        "time FLOAT NOT NULL, \n\tPRIMARY KEY (id), \n\tFOREIGN KEY(run_id) REFERENCES run (id) "
        "ON DELETE CASCADE\n)"
    ),
    "log_line": (
        "CREATE TABLE log_line (\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \n\trun_id "
        "VARCHAR NOT NULL, \n\ttime FLOAT NOT NULL, \n\tlevel VARCHAR NOT NULL, \n\tmessage "
        "TEXT NOT NULL, \n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    ),
    "schema_version": (
        "CREATE TABLE schema_version (\n\tversion INTEGER NOT NULL, \n\tapplied_at FLOAT NOT "
        "NULL, \n\tPRIMARY KEY (version)\n)"
    ),
    "ix_run_status_created": "CREATE INDEX ix_run_status_created ON run (status, created_at)",
    "ix_run_owner_created": "CREATE INDEX ix_run_owner_created ON run (owner, created_at)",
    "ix_metric_run_id": "CREATE INDEX ix_metric_run_id ON metric (run_id, id)",
    "ix_metric_run_name_id": "CREATE INDEX ix_metric_run_name_id ON metric (run_id, name, id)",
    "ix_metric_run_step": "CREATE INDEX ix_metric_run_step ON metric (run_id, step)",
    "ix_sample_run_step": "CREATE INDEX ix_sample_run_step ON sample (run_id, step)",
    "ix_log_line_run_id": "CREATE INDEX ix_log_line_run_id ON log_line (run_id, id)",
}
# Version 3 also adds the phases a run's worker records.
V3_SCHEMA |= {
    "run_phase": (
        "CREATE TABLE run_phase (\n\tid INTEGER NOT NULL, \n\trun_id VARCHAR NOT NULL, \n\t"
        "phase VARCHAR NOT NULL, \n\tstep INTEGER, \n\ttime FLOAT NOT NULL, \n\tPRIMARY KEY "
        "(id), \n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    ),
    "ix_run_phase_run_id": "CREATE INDEX ix_run_phase_run_id ON run_phase (run_id, id)",
    "run_note": (
        "CREATE TABLE run_note (\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \n\trun_id "
        "VARCHAR NOT NULL, \n\tstep INTEGER NOT NULL, \n\tkind VARCHAR NOT NULL, \n\tmessage "
        "TEXT NOT NULL, \n\tdetail_json TEXT NOT NULL, \n\ttime FLOAT NOT NULL, \n\tFOREIGN "
        "KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    ),
    "ix_run_note_run_id": "CREATE INDEX ix_run_note_run_id ON run_note (run_id, id)",
}

# Version 4 adds what users write about their runs (tags and a note), and the seconds a run's
# earlier attempts ran.
V4_SCHEMA = V3_SCHEMA | {
    "run": V3_SCHEMA["run"].replace(
        "owner VARCHAR NOT NULL, ",
        "owner VARCHAR NOT NULL, \n\tearlier_attempts_s FLOAT NOT NULL, ",
    ),
    "run_label": (
        "CREATE TABLE run_label (\n\trun_id VARCHAR NOT NULL, \n\ttags_json TEXT NOT NULL, "
        "\n\tnote TEXT NOT NULL, \n\tupdated_at FLOAT NOT NULL, \n\tPRIMARY KEY (run_id), "
        "\n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    ),
}

# Version 5 adds each sample's length in tokens and the distributions of each step's batch.
V5_SCHEMA = V4_SCHEMA | {
    "sample": V4_SCHEMA["sample"].replace(
        "time FLOAT NOT NULL, ", "time FLOAT NOT NULL, \n\ttokens INTEGER, "
    ),
    "step_distribution": (
        "CREATE TABLE step_distribution (\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "
        "\n\trun_id VARCHAR NOT NULL, \n\tstep INTEGER NOT NULL, \n\tname VARCHAR NOT NULL, "
        "\n\tcount INTEGER NOT NULL, \n\tvalues_json TEXT NOT NULL, \n\ttime FLOAT NOT NULL, "
        "\n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    ),
    "ix_step_distribution_run_id": (
        "CREATE INDEX ix_step_distribution_run_id ON step_distribution (run_id, id)"
    ),
    "ix_step_distribution_run_step": (
        "CREATE INDEX ix_step_distribution_run_step ON step_distribution (run_id, step)"
    ),
}

# Version 2 had no queued_at (version 3 adds it: a resumed run queues from its resume).
NEW_IN_V3 = {"phase", "note"}  # the tables (and their indexes) version 3 added
V2_SCHEMA = {
    **{name: sql for name, sql in V3_SCHEMA.items() if not NEW_IN_V3 & set(name.split("_"))},
    "run": V3_SCHEMA["run"].replace("\n\tqueued_at FLOAT, ", ""),
}


@dataclass
class Trace:
    component: str
    raw: float


def stored_schema(path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    return {name: sql for name, sql in rows if name != "sqlite_sequence"}


def test_a_new_file_has_exactly_the_v5_tables_and_indexes(data_dir):
    Database(db_path(data_dir)).close()
    assert SCHEMA_VERSION == 5
    assert stored_schema(db_path(data_dir)) == V5_SCHEMA


def test_the_table_models_are_the_row_types(db):
    run = create_run(db, algorithm="grpo", config={"lr": 1e-5}, run_id="r1")
    assert type(run) is Run and type(get_run(db, "r1")) is Run
    assert (run.status, run.config, run.is_terminal) == (RunStatus.QUEUED, {"lr": 1e-5}, False)
    assert get_run(db, "r1") == run and list_runs(db) == [run]
    done = set_status(db, "r1", RunStatus.RUNNING)
    done = set_status(db, "r1", RunStatus.COMPLETED)
    assert type(done.status) is RunStatus and done.is_terminal

    add_samples(db, "r1", 2, [{"prompt": "p", "completion": "c", "trace": [Trace("f", 1.0)]}])
    (sample,) = samples_at(db, "r1", 2)
    assert type(sample) is Sample
    assert (sample.run_id, sample.step, sample.trace, sample.extra) == (
        "r1",
        2,
        [{"component": "f", "raw": 1.0}],
        {},
    )

    with MetricWriter(db, "r1") as writer:
        writer.log(1, {"reward/total": 0.5})
    (point,), _ = metrics_since(db, "r1")
    assert point._fields == ("id", "step", "name", "value", "time")
    append_logs(db, "r1", [(1.0, "info", "hello")])
    (line,), _ = logs_since(db, "r1")
    assert line._fields == ("id", "time", "level", "message")


def test_json_and_status_columns_hold_the_v2_text(data_dir):
    path = db_path(data_dir)
    with Database(path) as db:
        create_run(db, algorithm="grpo", config={"name": "é", "x": [1, 2.5]}, run_id="r1")
        update_run(db, "r1", status="running")
        add_samples(
            db,
            "r1",
            0,
            [{"prompt": "p", "completion": "c", "trace": [Trace("f", math.nan)], "extra": {1: 2}}],
        )
    with sqlite3.connect(path) as conn:
        status, config = conn.execute("SELECT status, config_json FROM run").fetchone()
        trace, extra = conn.execute("SELECT trace_json, extra_json FROM sample").fetchone()
    assert (status, config) == ("running", '{"name":"é","x":[1,2.5]}')
    assert (trace, extra) == ('[{"component":"f","raw":null}]', '{"1":2}')


def test_a_v2_file_written_by_earlier_code_reads_and_writes(data_dir):
    path = db_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        for sql in V2_SCHEMA.values():
            conn.execute(sql)
        conn.execute("INSERT INTO schema_version VALUES (2, 0.0)")
        conn.execute(
            "INSERT INTO run (id, name, algorithm, status, config_json, created_at, last_step, "
            "attempt, owner) VALUES ('old', 'old', 'ppo', 'failed', '{\"a\": 1}', 1.0, 3, 1, "
            "'user:alice')"
        )
        conn.execute(
            "INSERT INTO sample (run_id, step, prompt, completion, trace_json, extra_json, time) "
            "VALUES ('old', 3, 'p', 'c', '[{\"raw\": null}]', '{}', 2.0)"
        )
        conn.execute(
            "INSERT INTO metric (run_id, step, name, value, time) "
            "VALUES ('old', 3, 'loss', 0.5, 2.0), ('old', 3, 'ppo/entropy', 1.5, 2.0)"
        )
    with Database(path) as db:
        run = get_run(db, "old")
        assert phases(db, "old") == []
        assert (run.status, run.config, run.owner, run.last_step) == (
            RunStatus.FAILED,
            {"a": 1},
            "user:alice",
            3,
        )
        assert samples_at(db, "old", 3)[0].trace == [{"raw": None}]
        # a PPO run's entropy under the one name every trainer's entropy has since v3
        assert metric_names(db, "old") == ["loss", "policy/entropy"]
        assert sample_steps(db, "old") == [3]
        again = set_status(db, "old", RunStatus.QUEUED, config={"a": 2})
        assert (again.attempt, again.config) == (2, {"a": 2})
        assert run.queued_at is None  # migrated: it queues by its creation time
        assert samples_at(db, "old", 3)[0].tokens is None  # stored before lengths were
        assert distributions_since(db, "old") == ([], 0)
        add_distributions(db, "old", 4, {"dist/reward": [1.0]})
    migrated = stored_schema(path)
    migrated_run = migrated.pop("run")  # ALTER TABLE's: new columns at the end
    assert "owner VARCHAR NOT NULL, queued_at FLOAT, earlier_attempts_s FLOAT NOT NULL" in (
        migrated_run
    )
    assert "time FLOAT NOT NULL, tokens INTEGER, " in migrated.pop("sample")
    assert migrated == {k: v for k, v in V5_SCHEMA.items() if k not in ("run", "sample")}


def test_distinct_values_of_a_run_ascending(db):
    for rid in ("a", "b"):
        create_run(db, algorithm="grpo", config={}, run_id=rid)
    with MetricWriter(db, "a") as writer:
        for step in range(1, 40):
            writer.log(step, {"z": 1.0, "m": 2.0, "a/b": 3.0})
    with MetricWriter(db, "b") as writer:
        writer.log(1, {"other": 0.0})
    for step in (5, 1, 5, 3):
        add_samples(db, "a", step, [{"prompt": "p", "completion": "c"}])
    assert distinct_values(db, Metric.name, "a") == metric_names(db, "a") == ["a/b", "m", "z"]
    assert distinct_values(db, Metric.step, "b") == [1]
    assert distinct_values(db, Sample.step, "a") == sample_steps(db, "a") == [1, 3, 5]
    assert distinct_values(db, Metric.name, "missing") == []


@pytest.mark.parametrize(
    ("column", "index"),
    [(Metric.name, "ix_metric_run_name_id"), (Sample.step, "ix_sample_run_step")],
)
def test_distinct_values_seek_the_index_instead_of_scanning_the_table(db, column, index):
    query = distinct_values_query(column.class_, column.key).text
    plan = db.read(lambda s: s.execute(text(f"EXPLAIN QUERY PLAN {query}"), {"run_id": "a"}).all())
    details = [row[-1] for row in plan]
    assert not [d for d in details if d.startswith(f"SCAN {column.class_.__tablename__}")]
    assert any(index in d for d in details), details
