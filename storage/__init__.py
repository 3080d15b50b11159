"""Reward Studio's storage: one SQLite file (SQLModel schema, WAL) shared by workers and the UI.

Two rooms and the run-level modules beside them:

- :mod:`storage.sqlite`: the database itself. :mod:`~storage.sqlite.db` (the
  :class:`~storage.sqlite.db.Database`, the engine with its pragmas and retries),
  :mod:`~storage.sqlite.schema` (the tables, ``SCHEMA_VERSION`` and ``RunStatus``; the table models
  are also the row types that reads return), :mod:`~storage.sqlite.migrations`,
  :mod:`~storage.sqlite.encoding` (values checked for their columns) and
  :mod:`~storage.sqlite.queries` (the query patterns the rest shares: batch insert, read since a
  cursor, distinct values by index skip-scan), each written once.
- :mod:`storage.records`: what a run's worker writes and the UI reads back, one module per kind of
  row: metrics, samples, logs, notes, phases; e.g. ``metrics.metrics_since(db, run_id, cursor)``.
- :mod:`storage.runs` (create, read, list, status changes: ``runs.create_run(db, ...)``),
  :mod:`storage.labels` (tags and notes), :mod:`storage.run_caps` (queued-run caps),
  :mod:`storage.progress` (the dashboard's one query per tick), :mod:`storage.export` (a run's
  results as files) and :mod:`storage.paths` (where the data dir, the database file and run
  folders are).
"""

from storage.paths import db_path, resolve_data_dir, runs_dir
from storage.sqlite.db import Database, DatabaseLockedError, SchemaVersionError, StorageError
from storage.sqlite.schema import SCHEMA_VERSION, RunStatus

__all__ = [
    "SCHEMA_VERSION",
    "Database",
    "DatabaseLockedError",
    "RunStatus",
    "SchemaVersionError",
    "StorageError",
    "db_path",
    "resolve_data_dir",
    "runs_dir",
]
