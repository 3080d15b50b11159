"""The query patterns the per-table modules share, each written once.

- :func:`insert_rows`: a batch of one run's rows in one transaction.
- :func:`rows_since`: a run's rows after a cursor (the last id seen), in id order.
- :func:`distinct_values`: the distinct values of a column within a run, by index skip-scan.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Row, TextClause, bindparam, func, insert, select, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute
from sqlmodel import SQLModel

from storage.runs import RunNotFoundError
from storage.sqlite.db import Database
from storage.sqlite.encoding import as_int


def insert_rows(
    db: Database, model: type[SQLModel], run_id: str, rows: Sequence[dict[str, Any]]
) -> int:
    """Insert ``rows`` (dicts keyed by the model's field names) of run ``run_id`` in one
    transaction; returns how many. A missing run fails the foreign key: RunNotFoundError."""
    if not rows:
        return 0
    try:
        db.write(lambda session: session.execute(insert(model), rows))
    except IntegrityError as exc:
        raise RunNotFoundError(f"no run with id {run_id!r}") from exc
    return len(rows)


def rows_since(
    db: Database,
    columns: Sequence[InstrumentedAttribute[Any]],
    run_id: str,
    cursor: int,
    limit: int,
    *filters: ColumnElement[bool],
) -> tuple[list[Row[Any]], int]:
    """The run's rows with ``id > cursor`` (and ``filters``) in id order, at most ``limit``, as
    rows of ``columns`` (the first must be the model's ``id``), and the next cursor: the last
    id returned, or ``cursor`` when there is nothing new.

    Rows of columns, not model objects: a 50,000-row page reads in ~0.26 s this way and ~1.6 s
    as ORM objects (identity map and instance state per row), measured on this project's CPU box.
    Ids are safe cursors with several writers: see :mod:`storage.sqlite.schema`.
    """
    cursor = as_int(cursor, "cursor", minimum=0)
    limit = as_int(limit, "limit", minimum=1)
    table = columns[0].class_
    query = (
        select(*columns)
        .where(table.run_id == run_id, table.id > cursor, *filters)
        .order_by(table.id)
        .limit(limit)
    )
    rows = db.read(lambda session: list(session.execute(query)))
    return rows, (rows[-1].id if rows else cursor)


def distinct_values(db: Database, column: InstrumentedAttribute[Any], run_id: str) -> list[Any]:
    """The distinct values of ``column`` in the rows of run ``run_id``, ascending."""
    query = distinct_values_query(column.class_, column.key)
    return db.read(lambda session: list(session.execute(query, {"run_id": run_id}).scalars()))


@functools.cache
def distinct_values_query(model: type[SQLModel], field: str) -> TextClause:
    """The SQL of :func:`distinct_values` (parameter ``:run_id``), built from the model's columns
    once per column and kept as text: running a Core statement re-derives its cache key on every
    call, which cost ~15 us (8%) more than this text.

    A recursive CTE that seeks the next larger value on a ``(run_id, column)`` index, one B-tree
    seek per distinct value instead of reading every row (the "loose index scan" of
    https://wiki.postgresql.org/wiki/Loose_indexscan, in SQLite's recursive CTE syntax).
    """
    column = getattr(model, field)
    run_id = bindparam("run_id")
    first = select(func.min(column).label("value")).where(model.run_id == run_id)
    found = first.cte("found", recursive=True)
    following = select(func.min(column)).where(model.run_id == run_id, column > found.c.value)
    found = found.union_all(select(following.scalar_subquery()).where(found.c.value.is_not(None)))
    query = select(found.c.value).where(found.c.value.is_not(None))
    return text(str(query.compile(dialect=sqlite.dialect(paramstyle="named"))))
