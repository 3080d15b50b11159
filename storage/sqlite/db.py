"""The SQLite database of Reward Studio: one engine per process, short transactions, retries.

Several processes share one ``studio.db``: each run's worker writes its own run's rows and the
web UI reads (and records status changes). What makes that safe:

- WAL journal: readers never block the writer and the writer never blocks readers.
- ``synchronous=NORMAL``: in WAL mode a power cut can lose the last commits but never corrupts
  the file; a crash of a process loses nothing it committed.
- Every write transaction starts with ``BEGIN IMMEDIATE``, taking the write lock up front. A
  deferred transaction that reads and then writes can fail with "database is locked" at once
  (SQLite cannot wait there without risking deadlock); an immediate one waits its turn.
- ``busy_timeout`` (10 s): a writer waits that long for the lock inside SQLite. Beyond it,
  :meth:`Database.write` retries the whole transaction a few times with backoff and then raises
  :class:`DatabaseLockedError`; callers that buffer data (``MetricWriter``) keep it and log.
- ``foreign_keys=ON``: metric, sample and log rows always belong to an existing run.

Connections come from a small pool (``check_same_thread=False``: Gradio runs handlers in worker
threads, and the pool hands each connection to one thread at a time). They are returned at the
end of every transaction, hold no snapshot while idle, and are all closed by :meth:`close`.
A process that forks gets fresh connections (SQLite handles must not cross a fork).
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from sqlalchemy import event, func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine

from storage.sqlite import migrations, schema

logger = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_S = 10.0
LOCK_RETRIES = 3
POOL_SIZE = 4
POOL_OVERFLOW = 8
# Whether this thread is inside a transaction of any Database: one more write from the same
# thread would wait on the lock the thread itself holds (the log handler that stores a run's log
# lines asks, engine/tracking/recorder.py).
_TRANSACTING = threading.local()


class StorageError(RuntimeError):
    """The studio database cannot be used as asked."""


class SchemaVersionError(StorageError):
    """The database file's schema version is not one this code can use."""


class DatabaseLockedError(StorageError):
    """The write lock stayed taken beyond the busy timeout and every retry."""


def in_transaction() -> bool:
    """Whether this thread is inside a :class:`Database` transaction (or its retries)."""
    return getattr(_TRANSACTING, "active", False)


def is_locked_error(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "database table is locked" errors (SQLITE_BUSY)."""
    message = str(getattr(exc, "orig", exc)).lower()
    return "database is locked" in message or "database table is locked" in message


class ClosedOnExit:
    """``with obj:`` closes ``obj`` at the end of the block, however it ends."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Database(ClosedOnExit):
    """One SQLite file, opened with Reward Studio's pragmas and brought to the current schema.

    Use :meth:`read` and :meth:`write` with a function of a SQLModel ``Session``; each call is
    one short transaction. The query modules (:mod:`storage.runs`, :mod:`storage.records.metrics`,
    :mod:`storage.records.samples`, :mod:`storage.records.logs`) are the usual way in.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        lock_retries: int = LOCK_RETRIES,
    ) -> None:
        if str(path) in ("", ":memory:"):
            raise ValueError(
                f"path: {str(path)!r} is not a file path; the studio database must be a file "
                "that several processes can open"
            )
        if busy_timeout_s <= 0:
            raise ValueError(f"busy_timeout_s: must be > 0 seconds, got {busy_timeout_s}")
        if lock_retries < 0:
            raise ValueError(f"lock_retries: must be >= 0, got {lock_retries}")
        self.path = Path(path).expanduser().resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout_s = busy_timeout_s
        self.lock_retries = lock_retries
        self._closed = False
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()
        self._engine = self._create_engine()
        self._write_engine = self._engine.execution_options(sqlite_begin="IMMEDIATE")
        self.schema_version = self._initialize()

    # ---- engine ---------------------------------------------------------------------------
    def _create_engine(self) -> Engine:
        engine = create_engine(
            f"sqlite:///{self.path}",
            connect_args={"check_same_thread": False, "timeout": self.busy_timeout_s},
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
        )
        busy_ms = int(self.busy_timeout_s * 1000)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # transactions are begun by _on_begin below
            cursor = dbapi_conn.cursor()
            try:
                cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
                mode = _set_wal(cursor, self.path)
                if mode != "wal":
                    logger.warning(
                        "%s: journal mode is %r, not 'wal' (the file system may not support "
                        "WAL); concurrent readers and writers will block each other",
                        self.path,
                        mode,
                    )
                cursor.execute("PRAGMA synchronous = NORMAL")
                cursor.execute("PRAGMA foreign_keys = ON")
            finally:
                cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (reads begin DEFERRED); prefer :meth:`read`/:meth:`write`."""
        self._check_usable()
        return self._engine

    def _check_usable(self) -> None:
        if self._closed:
            raise StorageError(f"{self.path}: the database was closed")
        if os.getpid() != self._pid:
            with self._fork_lock:
                if os.getpid() != self._pid:
                    # Forget the parent's pooled connections without closing them under it.
                    self._engine.dispose(close=False)
                    self._pid = os.getpid()

    # ---- transactions ---------------------------------------------------------------------
    def read(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn(session)`` in one read transaction (a consistent snapshot) and return its
        result."""
        return self._transact(fn, write=False)

    def write(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn(session)`` in one ``BEGIN IMMEDIATE`` transaction and commit it.

        ``fn`` may run more than once (after a rolled-back attempt that hit a locked database),
        so it must only touch the database, never outside state.
        """
        return self._transact(fn, write=True)

    def _transact(self, fn: Callable[[Session], T], *, write: bool) -> T:
        outer = in_transaction()
        _TRANSACTING.active = True
        try:
            return self._retried(fn, write=write)
        finally:
            _TRANSACTING.active = outer

    def _retried(self, fn: Callable[[Session], T], *, write: bool) -> T:
        self._check_usable()
        engine = self._write_engine if write else self._engine
        delay = 0.05
        attempt = 0
        while True:
            attempt += 1
            try:
                with Session(engine, expire_on_commit=False) as session, session.begin():
                    return fn(session)
            except OperationalError as exc:
                if not is_locked_error(exc):
                    raise
                if attempt > self.lock_retries:
                    logger.error(
                        "%s: database is locked after %d attempts of %.1f s each; giving up",
                        self.path,
                        attempt,
                        self.busy_timeout_s,
                    )
                    raise DatabaseLockedError(
                        f"{self.path}: database is locked (another process held the write lock "
                        f"for over {self.busy_timeout_s:.0f} s, {attempt} times)"
                    ) from exc
                logger.warning(
                    "%s: database is locked after a %.1f s wait (attempt %d of %d); retrying",
                    self.path,
                    self.busy_timeout_s,
                    attempt,
                    self.lock_retries + 1,
                )
                time.sleep(delay * (1.0 + random.random()))
                delay = min(delay * 2, 2.0)

    # ---- schema ---------------------------------------------------------------------------
    def _initialize(self) -> int:
        """Create the tables on first open, or check and migrate the version; returns it."""
        target = schema.SCHEMA_VERSION

        def init(session: Session) -> int:
            conn = session.connection()
            tables = {
                row[0]
                for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")
            } - {"sqlite_sequence"}
            if "schema_version" not in tables:
                if tables:
                    raise SchemaVersionError(
                        f"{self.path} has tables ({', '.join(sorted(tables))}) but no "
                        "schema_version table: it is not a Reward Studio database; point "
                        "--data-dir or STUDIO_DATA_DIR elsewhere"
                    )
                for table in schema.TABLES:
                    table.create(conn)
                session.add(schema.SchemaVersion(version=target, applied_at=time.time()))
                return target
            current = session.execute(select(func.max(schema.SchemaVersion.version))).scalar()
            if current is None:
                raise SchemaVersionError(f"{self.path}: the schema_version table is empty")
            if current > target:
                raise SchemaVersionError(
                    f"{self.path} has schema version {current}, newer than this Reward Studio "
                    f"understands ({target}); upgrade Reward Studio, or point --data-dir or "
                    "STUDIO_DATA_DIR at another data dir"
                )
            if current < target:
                migrations.migrate(conn, current, target)
                conn.exec_driver_sql("DELETE FROM schema_version")
                session.add(schema.SchemaVersion(version=target, applied_at=time.time()))
            return target

        try:
            return self.write(init)
        except BaseException:
            self._engine.dispose()
            self._closed = True
            raise

    # ---- life cycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Close every pooled connection; the object cannot be used afterwards."""
        if not self._closed:
            self._closed = True
            self._engine.dispose()

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r})"


def _set_wal(cursor: sqlite3.Cursor, path: Path) -> str:
    """Switch to WAL (persistent in the file) and return the journal mode now in effect.

    Only the first switch of a new file needs a lock; several processes opening a fresh file
    at once can see "database is locked" here even with a busy timeout, so retry briefly.
    """
    for attempt in range(50):
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return str(cursor.fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            if not is_locked_error(exc) or attempt == 49:
                raise
            time.sleep(0.02 + 0.02 * random.random())
    raise AssertionError("unreachable")  # pragma: no cover
