"""Reward Studio's storage: one SQLite file (SQLModel schema, WAL) shared by workers and the UI.

Modules, split by concern:

- :mod:`storage.paths`: where the data dir, the database file and run folders are.
- :mod:`storage.schema`: the tables, ``SCHEMA_VERSION`` and ``RunStatus``; the table models are
  also the row types that reads return (``Run``, ``Sample``).
- :mod:`storage.db`: :class:`~storage.db.Database`, the engine with its pragmas and retries.
- :mod:`storage.runs`, :mod:`storage.metrics`, :mod:`storage.samples`, :mod:`storage.logs`:
  the queries, e.g. ``runs.create_run(db, ...)``, ``metrics.metrics_since(db, run_id, cursor)``.
- :mod:`storage.queries`: the query patterns those share (batch insert, read since a cursor,
  distinct values by index skip-scan), each written once.
"""

from storage.db import Database, DatabaseLockedError, SchemaVersionError, StorageError
from storage.paths import db_path, resolve_data_dir, runs_dir
from storage.schema import SCHEMA_VERSION, RunStatus

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
