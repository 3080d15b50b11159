"""Log lines of a run's worker: appended in batches, read incrementally by cursor."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Row

from storage.sqlite.db import Database
from storage.sqlite.queries import insert_rows, rows_since
from storage.sqlite.schema import LogLine

MAX_LEVEL_LENGTH = 20


# One stored log line, read by cursor: a row of these columns of the LogLine model, so
# ``line.id`` (its cursor), ``line.time`` (epoch seconds, UTC), ``line.level``, ``line.message``.
ENTRY_COLUMNS = (LogLine.id, LogLine.time, LogLine.level, LogLine.message)
LogEntry = Row[tuple[int, float, str, str]]


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
    return insert_rows(db, LogLine, run_id, rows)


def logs_since(
    db: Database, run_id: str, cursor: int = 0, *, limit: int = 1000
) -> tuple[list[LogEntry], int]:
    """The run's log lines with ``id > cursor`` in order, at most ``limit``, and the next
    cursor (the last id returned, or ``cursor`` when there is nothing new)."""
    return rows_since(db, ENTRY_COLUMNS, run_id, cursor, limit)
