"""Metrics: a batching writer for the worker, and cursor reads for the dashboard.

Writes: :class:`MetricWriter` buffers ``log(step, {name: value})`` calls and writes them in one
transaction per batch, together with the run's ``last_step`` and ``heartbeat_at``, so the UI's
:func:`storage.progress.latest_steps` moves exactly when new points are readable. A batch is written
when ``flush_every`` rows are pending, or ``flush_seconds`` after its first row (a timer thread,
so a quiet trainer still shows up within that delay), or on :meth:`MetricWriter.flush` and
:meth:`MetricWriter.close`. A batch that cannot be written stays pending and is retried; rows
are only ever dropped past ``max_pending`` or when their run was deleted, and never silently.

Reads: :func:`metrics_since` returns the rows after a cursor (the last row id seen) in id order,
so each row reaches a poller exactly once; see :mod:`storage.sqlite.schema` for why ids are safe
cursors with several writer processes.

Values that are not finite numbers (NaN, ±inf, None) are stored as NULL (``value=None``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from storage.runs import RunNotFoundError, get_run
from storage.sqlite.db import ClosedOnExit, Database
from storage.sqlite.encoding import as_int, finite_or_none, series_name
from storage.sqlite.queries import distinct_values, rows_since
from storage.sqlite.schema import Metric, Run

logger = logging.getLogger(__name__)

MAX_NAME_LENGTH = 200
RETRY_SECONDS = 2.0  # pause before retrying a batch the database refused
DEFAULT_LIMIT = 50_000


# One stored metric row, read by cursor: a row of these columns of the Metric model, so
# ``point.id`` (its cursor), ``point.step``, ``point.name``, ``point.value``, ``point.time``.
POINT_COLUMNS = (Metric.id, Metric.step, Metric.name, Metric.value, Metric.time)
MetricPoint = Row[tuple[int, int, str, float | None, float]]


@dataclass
class MetricSeries:
    """One metric of one run, by step (columnar, as charts want it), with each point's time
    (seconds since the epoch) for charts by relative time."""

    steps: list[int] = field(default_factory=list)
    values: list[float | None] = field(default_factory=list)
    times: list[float] = field(default_factory=list)


def _metric_name(name: Any) -> str:
    return series_name(name, "metric name", MAX_NAME_LENGTH)


class MetricWriter(ClosedOnExit):
    """Batches one run's metrics into few short write transactions. Thread-safe.

    Args:
        db: the studio database.
        run_id: an existing run; its rows are the only ones this writer touches.
        flush_every: write as soon as this many rows are pending.
        flush_seconds: write at most this long after the first pending row was logged.
        max_pending: while the database cannot be written, keep at most this many rows; older
            ones are dropped with an error in the log.
    """

    def __init__(
        self,
        db: Database,
        run_id: str,
        *,
        flush_every: int = 500,
        flush_seconds: float = 0.5,
        max_pending: int = 1_000_000,
    ) -> None:
        if flush_every < 1:
            raise ValueError(f"flush_every: must be >= 1 row, got {flush_every}")
        if flush_seconds <= 0:
            raise ValueError(f"flush_seconds: must be > 0, got {flush_seconds}")
        if max_pending < flush_every:
            raise ValueError(
                f"max_pending: must be >= flush_every ({flush_every}), got {max_pending}"
            )
        if get_run(db, run_id) is None:
            raise RunNotFoundError(f"no run with id {run_id!r}")
        self.db = db
        self.run_id = run_id
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.max_pending = max_pending
        self.rows_written = 0
        self.rows_dropped = 0
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # guards _pending, _timer, _closed
        self._flush_lock = threading.Lock()  # one flush at a time: no row is written twice
        self._timer: threading.Timer | None = None
        self._closed = False
        self._retry_at = 0.0  # after a failed write, log() leaves retries to the timer until then
        self._head_drops = 0  # rows ever dropped from the head of _pending (see flush)

    @property
    def pending(self) -> int:
        """Rows logged but not yet written."""
        with self._lock:
            return len(self._pending)

    def log(self, step: int, values: Mapping[str, Any], *, at: float | None = None) -> None:
        """Queue ``values`` (``{name: number}``) for ``step``; ``at`` defaults to now (epoch s)."""
        step = as_int(step, "step", minimum=0)
        if not isinstance(values, Mapping):
            raise TypeError(f"values: expected a mapping of name to number, got {values!r}")
        now = time.time() if at is None else float(at)
        rows = [
            {
                "run_id": self.run_id,
                "step": step,
                "name": _metric_name(name),
                "value": finite_or_none(value, f"metric {name!r}"),
                "time": now,
            }
            for name, value in values.items()
        ]
        if not rows:
            return
        with self._lock:
            if self._closed:
                raise RuntimeError(f"metric writer of run {self.run_id} is closed")
            self._pending.extend(rows)
            self._drop_overflow()
            now_mono = time.monotonic()
            flush_now = len(self._pending) >= self.flush_every and now_mono >= self._retry_at
            if not flush_now and self._timer is None:
                self._arm(max(self.flush_seconds, self._retry_at - now_mono))
        if flush_now:
            try:
                self.flush()
            except RunNotFoundError:
                raise
            except Exception:  # logged and kept pending by flush(); the timer retries
                pass

    def flush(self) -> int:
        """Write every pending row now; returns how many were written.

        On failure the rows stay pending and the error is raised (and logged).
        """
        with self._flush_lock:
            with self._lock:
                batch = list(self._pending)
                drops_before = self._head_drops
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            if not batch:
                return 0
            try:
                self.db.write(lambda session: self._write(session, batch))
            except IntegrityError as exc:  # the run was deleted under us
                with self._lock:
                    self._forget_batch(len(batch), drops_before)
                    self.rows_dropped += len(batch)
                logger.error(
                    "Dropped %d metric rows: run %s no longer exists", len(batch), self.run_id
                )
                raise RunNotFoundError(f"no run with id {self.run_id!r}") from exc
            except Exception:
                logger.error(
                    "Could not write %d metric rows of run %s (steps %d-%d); they stay pending "
                    "and are retried",
                    len(batch),
                    self.run_id,
                    batch[0]["step"],
                    batch[-1]["step"],
                    exc_info=True,
                )
                with self._lock:
                    self._retry_at = time.monotonic() + RETRY_SECONDS
                    if self._timer is None and not self._closed:
                        self._arm(RETRY_SECONDS)
                raise
            with self._lock:
                self._forget_batch(len(batch), drops_before)
                self.rows_written += len(batch)
                self._retry_at = 0.0
            return len(batch)

    def _forget_batch(self, size: int, drops_before: int) -> None:
        """Remove a handled batch from the head of _pending (lock held). Rows logged during the
        write come after it and stay; rows of it that overflow dropped meanwhile are gone."""
        already_gone = min(size, self._head_drops - drops_before)
        del self._pending[: size - already_gone]

    def _write(self, session: Session, batch: list[dict[str, Any]]) -> None:
        session.execute(insert(Metric), batch)
        session.execute(
            update(Run)
            .where(Run.id == self.run_id)
            .values(
                last_step=func.max(Run.last_step, max(row["step"] for row in batch)),
                heartbeat_at=time.time(),
            )
        )

    def close(self) -> None:
        """Write what is pending and stop; raises if that last write fails (after logging)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        try:
            self.flush()
        except Exception:
            logger.error("Lost %d metric rows of run %s at close", self.pending, self.run_id)
            raise

    # ---- internals (called with self._lock held) ------------------------------------------
    def _arm(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._timed_flush)
        self._timer.daemon = True
        self._timer.name = f"metric-flush-{self.run_id}"
        self._timer.start()

    def _drop_overflow(self) -> None:
        excess = len(self._pending) - self.max_pending
        if excess > 0:
            dropped = self._pending[:excess]
            del self._pending[:excess]
            self.rows_dropped += excess
            self._head_drops += excess
            logger.error(
                "Dropped the %d oldest pending metric rows of run %s (steps %d-%d): the "
                "database has not accepted writes and more than %d rows are waiting",
                excess,
                self.run_id,
                dropped[0]["step"],
                dropped[-1]["step"],
                self.max_pending,
            )

    def _timed_flush(self) -> None:
        with self._lock:
            self._timer = None
        # A failure is logged by flush(), which also re-arms the timer while rows remain.
        with contextlib.suppress(Exception):
            self.flush()


def metrics_since(
    db: Database,
    run_id: str,
    cursor: int = 0,
    *,
    names: Iterable[str] | None = None,
    limit: int = DEFAULT_LIMIT,
) -> tuple[list[MetricPoint], int]:
    """The run's metric rows with ``id > cursor`` in id order, at most ``limit`` of them, and
    the next cursor (the last id returned, or ``cursor`` when there is nothing new).

    Poll with the returned cursor to get each row exactly once; a full page
    (``len(rows) == limit``) means more rows are waiting.
    """
    filters = []
    if names is not None:
        wanted = [_metric_name(n) for n in ([names] if isinstance(names, str) else names)]
        filters.append(Metric.name.in_(wanted))
    return rows_since(db, POINT_COLUMNS, run_id, cursor, limit, *filters)


def metric_names(db: Database, run_id: str) -> list[str]:
    """The distinct metric names of a run, sorted."""
    return distinct_values(db, Metric.name, run_id)


def metric_series(db: Database, run_ids: Sequence[str], name: str) -> dict[str, MetricSeries]:
    """One metric of several runs, each ordered by step (for the compare view).

    Every requested run gets an entry, empty when it has no such metric.
    """
    name = _metric_name(name)
    ids = list(dict.fromkeys(run_ids))
    # Ordered like the (run_id, name, id) index, so SQLite reads only this metric's rows; an
    # ORDER BY step would make it prefer the (run_id, step) index and scan every metric.
    query = (
        select(Metric.run_id, Metric.step, Metric.value, Metric.time)
        .where(Metric.run_id.in_(ids), Metric.name == name)
        .order_by(Metric.run_id, Metric.id)
    )

    def read(session: Session) -> dict[str, MetricSeries]:
        points: dict[str, list[tuple[int, float | None, float]]] = {rid: [] for rid in ids}
        for rid, step, value, at in session.execute(query):
            points[rid].append((step, value, at))
        out = {}
        for rid, rows in points.items():
            rows.sort(key=lambda row: row[0])  # stable: equal steps keep write order
            out[rid] = MetricSeries(
                [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
            )
        return out

    return db.read(read) if ids else {}
