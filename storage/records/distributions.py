"""Distributions: the values a quantity took over one step's whole generation batch.

The samples (:mod:`storage.records.samples`) keep a few completions of a step with their texts;
a distribution keeps one number per completion of the whole batch, for histograms over steps
(W&B's and trackio's histogram panels). A row holds the sorted values, all of them up to
:data:`MAX_VALUES`, else :data:`MAX_VALUES` equal-mass quantiles of them (:func:`even_quantiles`),
so a row stays a few kilobytes however large the batch; ``count`` keeps the batch's size.

:func:`add_distributions` writes a step's rows in one transaction; :func:`distributions_since`
reads them back by cursor, as :func:`storage.records.metrics.metrics_since` reads metrics.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Row

from storage.sqlite.db import Database
from storage.sqlite.encoding import as_int, finite_or_none, series_name
from storage.sqlite.queries import insert_rows, rows_since
from storage.sqlite.schema import StepDistribution

#: Values kept per row: a batch of up to this many completions is kept whole.
MAX_VALUES = 128
#: Significant digits a value keeps: a histogram cannot show more, and a row stays small.
DIGITS = 4
MAX_NAME_LENGTH = 200
DEFAULT_LIMIT = 5_000

COLUMNS = (
    StepDistribution.id,
    StepDistribution.step,
    StepDistribution.name,
    StepDistribution.count,
    StepDistribution.values,
)
# One row read by cursor: ``.id``, ``.step``, ``.name``, ``.count``, ``.values``.
DistributionRow = Row[tuple[int, int, str, int, list[float]]]


def even_quantiles(ordered: Sequence[float], k: int) -> list[float]:
    """``k`` values of ``ordered`` (ascending) standing for equal shares of it: the inverse
    empirical CDF at ``(i + 1/2) / k`` for ``i < k`` (Hyndman & Fan 1996, definition 1), so each
    stands for ``len(ordered) / k`` values. ``ordered`` itself when it has at most ``k``."""
    n = len(ordered)
    if n <= k:
        return list(ordered)
    return [ordered[min(n - 1, math.ceil((i + 0.5) * n / k) - 1)] for i in range(k)]


def _rounded(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def _row(run_id: str, step: int, name: Any, values: Any, now: float) -> dict[str, Any] | None:
    name = series_name(name, "distribution name", MAX_NAME_LENGTH)
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(
            f"distributions[{name!r}]: expected a sequence of numbers, got {type(values).__name__}"
        )
    finite = [finite_or_none(v, f"distributions[{name!r}][{i}]") for i, v in enumerate(values)]
    ordered = sorted(v for v in finite if v is not None)  # "cannot score" is not a value
    if not ordered:
        return None
    kept = [_rounded(v) for v in even_quantiles(ordered, MAX_VALUES)]
    return {
        "run_id": run_id,
        "step": step,
        "name": name,
        "count": len(ordered),
        "values": kept,
        "time": now,
    }


def add_distributions(
    db: Database, run_id: str, step: int, values: Mapping[str, Sequence[float | None]]
) -> int:
    """Store ``{name: one value per completion}`` of one step in one transaction; returns the rows
    written. ``None`` and non-finite values are left out; a name with none left gets no row."""
    step = as_int(step, "step", minimum=0)
    if not isinstance(values, Mapping):
        raise TypeError(f"distributions: expected a mapping of name to values, got {values!r}")
    now = time.time()
    rows = [_row(run_id, step, name, vals, now) for name, vals in values.items()]
    return insert_rows(db, StepDistribution, run_id, [r for r in rows if r is not None])


def distributions_since(
    db: Database, run_id: str, cursor: int = 0, *, limit: int = DEFAULT_LIMIT
) -> tuple[list[DistributionRow], int]:
    """The run's distribution rows with ``id > cursor`` in id order, at most ``limit``, and the
    next cursor (the last id returned, or ``cursor`` when there is nothing new)."""
    return rows_since(db, COLUMNS, run_id, cursor, limit)
