"""Numbered schema migrations: ``MIGRATIONS[n]`` moves a database from version ``n`` to ``n + 1``.

Each step is explicit SQL run inside the opening transaction, so a database is either fully at
the new version or untouched. There is no column inspection: the version row alone says which
steps to run. To change the schema, bump ``storage.sqlite.schema.SCHEMA_VERSION``, change the
models, and add the step here, e.g.::

    def _v1_to_v2(conn: Connection) -> None:
        conn.exec_driver_sql("ALTER TABLE run ADD COLUMN seed INTEGER")

    MIGRATIONS = {1: _v1_to_v2}
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.engine import Connection

logger = logging.getLogger(__name__)

Migration = Callable[[Connection], None]


def _v1_to_v2(conn: Connection) -> None:
    """Runs get an owner; every run made before owners existed belongs to the local owner."""
    conn.exec_driver_sql("ALTER TABLE run ADD COLUMN owner VARCHAR NOT NULL DEFAULT 'local'")
    conn.exec_driver_sql("CREATE INDEX ix_run_owner_created ON run (owner, created_at)")


def _v2_to_v3(conn: Connection) -> None:
    """Workers record the phases they enter (older runs have none and read as training),
    metrics of one quantity share one name, runs record when they last joined the queue (older
    runs queue by their creation), and runs get notes: warnings and retries as typed rows
    (``storage.sqlite.schema.RunNote``)."""
    conn.exec_driver_sql(  # the text a new file gets, so both read the same in sqlite_master
        "CREATE TABLE run_phase (\n\tid INTEGER NOT NULL, \n\trun_id VARCHAR NOT NULL, \n\t"
        "phase VARCHAR NOT NULL, \n\tstep INTEGER, \n\ttime FLOAT NOT NULL, \n\tPRIMARY KEY "
        "(id), \n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    )
    conn.exec_driver_sql("CREATE INDEX ix_run_phase_run_id ON run_phase (run_id, id)")
    # PPO runs logged entropy and clip fraction under names of their own; one name per
    # quantity lets Compare overlay them with GRPO and RLOO runs.
    for old, new in (
        ("ppo/entropy", "policy/entropy"),
        ("ppo/clip_fraction", "policy/clip_ratio/region_mean"),
    ):
        conn.exec_driver_sql("UPDATE metric SET name = ? WHERE name = ?", (new, old))
    conn.exec_driver_sql("ALTER TABLE run ADD COLUMN queued_at FLOAT")
    conn.exec_driver_sql(
        "CREATE TABLE run_note (\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, \n\trun_id "
        "VARCHAR NOT NULL, \n\tstep INTEGER NOT NULL, \n\tkind VARCHAR NOT NULL, \n\tmessage "
        "TEXT NOT NULL, \n\tdetail_json TEXT NOT NULL, \n\ttime FLOAT NOT NULL, \n\tFOREIGN "
        "KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    )
    conn.exec_driver_sql("CREATE INDEX ix_run_note_run_id ON run_note (run_id, id)")


def _v3_to_v4(conn: Connection) -> None:
    """Runs get what their user writes about them: tags and a note
    (``storage.sqlite.schema.RunLabel``; older runs have none), and the seconds their earlier
    attempts ran (0 for older runs)."""
    conn.exec_driver_sql("ALTER TABLE run ADD COLUMN earlier_attempts_s FLOAT NOT NULL DEFAULT 0")
    conn.exec_driver_sql(  # the text a new file gets, so both read the same in sqlite_master
        "CREATE TABLE run_label (\n\trun_id VARCHAR NOT NULL, \n\ttags_json TEXT NOT NULL, "
        "\n\tnote TEXT NOT NULL, \n\tupdated_at FLOAT NOT NULL, \n\tPRIMARY KEY (run_id), "
        "\n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    )


def _v4_to_v5(conn: Connection) -> None:
    """Samples get their length in tokens (NULL on older samples), and runs get the distributions
    of their steps' whole generation batches (``storage.sqlite.schema.StepDistribution``; older
    runs have none)."""
    conn.exec_driver_sql("ALTER TABLE sample ADD COLUMN tokens INTEGER")
    conn.exec_driver_sql(  # the text a new file gets, so both read the same in sqlite_master
        "CREATE TABLE step_distribution (\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "
        "\n\trun_id VARCHAR NOT NULL, \n\tstep INTEGER NOT NULL, \n\tname VARCHAR NOT NULL, "
        "\n\tcount INTEGER NOT NULL, \n\tvalues_json TEXT NOT NULL, \n\ttime FLOAT NOT NULL, "
        "\n\tFOREIGN KEY(run_id) REFERENCES run (id) ON DELETE CASCADE\n)"
    )
    conn.exec_driver_sql(
        "CREATE INDEX ix_step_distribution_run_id ON step_distribution (run_id, id)"
    )
    conn.exec_driver_sql(
        "CREATE INDEX ix_step_distribution_run_step ON step_distribution (run_id, step)"
    )


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5}


def migrate(conn: Connection, current: int, target: int) -> None:
    """Run the steps ``current -> current + 1 -> ... -> target`` on ``conn``."""
    for version in range(current, target):
        step = MIGRATIONS.get(version)
        if step is None:
            raise RuntimeError(
                f"no migration from schema version {version} to {version + 1}; "
                f"this Reward Studio cannot open a version {current} database"
            )
        logger.info(
            "Migrating the studio database from schema version %d to %d", version, version + 1
        )
        step(conn)
