"""Log lines of a run's worker: appended in batches, read incrementally by cursor."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from storage.db import Database
from storage.encoding import as_int
from storage.runs import RunNotFoundError
from storage.schema import LogLine

MAX_LEVEL_LENGTH = 20


class LogEntry(NamedTuple):
    """One stored log line; ``id`` is its cursor, ``time`` epoch seconds (UTC)."""

    id: int
    time: float
    level: str
    message: str


def append_logs(db: Database, run_id: str, lines: Iterable[tuple[float, str, str]]) -> int:
    """Store ``(time, level, message)`` lines (e.g. from ``logging`` records' ``created``,
    ``levelname`` and formatted message) in one transaction; returns how many."""
    rows = []
    for i, line in enumerate(lines):
        where = f"lines[{i}]"
        if not isinstance(line, (tuple, list)) or len(line) != 3:
            raise ValueError(f"{where}: expected a (time, level, message) tuple, got {line!r}")
        at, level, message = line
        if isinstance(at, bool) or not isinstance(at, (int, float)):
            raise TypeError(f"{where}: time must be epoch seconds, got {at!r}")
        if not isinstance(level, str) or not level or len(level) > MAX_LEVEL_LENGTH:
            raise ValueError(f"{where}: level must be a short non-empty string, got {level!r}")
        if not isinstance(message, str):
            raise TypeError(f"{where}: message must be a string, got {type(message).__name__}")
        rows.append(
            {"run_id": run_id, "time": float(at), "level": level.upper(), "message": message}
        )
    if not rows:
        return 0
    try:
        db.write(lambda session: session.execute(insert(LogLine), rows))
    except IntegrityError as exc:
        raise RunNotFoundError(f"no run with id {run_id!r}") from exc
    return len(rows)


def logs_since(
    db: Database, run_id: str, cursor: int = 0, *, limit: int = 1000
) -> tuple[list[LogEntry], int]:
    """The run's log lines with ``id > cursor`` in order, at most ``limit``, and the next
    cursor (the last id returned, or ``cursor`` when there is nothing new)."""
    cursor = as_int(cursor, "cursor", minimum=0)
    limit = as_int(limit, "limit", minimum=1)
    query = (
        select(LogLine.id, LogLine.time, LogLine.level, LogLine.message)
        .where(LogLine.run_id == run_id, LogLine.id > cursor)
        .order_by(LogLine.id)
        .limit(limit)
    )

    def read(session: Session) -> list[LogEntry]:
        return [LogEntry._make(row) for row in session.execute(query)]

    rows = db.read(read)
    return rows, (rows[-1].id if rows else cursor)
