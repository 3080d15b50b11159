"""The distributions of the open run read so far (no Gradio): per quantity, each step's batch as
a few equal-mass values, bounded in memory however long the run.

Rows come from :func:`storage.records.distributions.distributions_since` by cursor, as metric
rows do. Each step keeps at most :data:`KEPT_VALUES` values (a heat map bins them into a couple
of dozen rows, so more would not show), and each quantity at most :data:`MAX_STEPS` steps:
past that, every other older step is dropped (the newest is always kept), as a chart of a long
run is thinned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from storage.records.distributions import even_quantiles

KEPT_VALUES = 64
MAX_STEPS = 480


@dataclass
class StepValues:
    """One quantity by step: ``counts[i]`` completions at ``steps[i]``, stood for by the sorted
    ``values[i]`` (each value for ``counts[i] / len(values[i])`` of them)."""

    steps: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    values: list[tuple[float, ...]] = field(default_factory=list)

    def add(self, step: int, count: int, values: Iterable[float]) -> None:
        """Append a step; one at or before the last replaces the tail from there (a resumed run
        records those steps again)."""
        if self.steps and step <= self.steps[-1]:
            keep = next(i for i, s in enumerate(self.steps) if s >= step)
            del self.steps[keep:], self.counts[keep:], self.values[keep:]
        self.steps.append(step)
        self.counts.append(count)
        self.values.append(tuple(even_quantiles(sorted(values), KEPT_VALUES)))
        if len(self.steps) > MAX_STEPS:
            kept = [*range(0, len(self.steps) - 1, 2), len(self.steps) - 1]
            self.steps = [self.steps[i] for i in kept]
            self.counts = [self.counts[i] for i in kept]
            self.values = [self.values[i] for i in kept]

    def __len__(self) -> int:
        return len(self.steps)


@dataclass
class DistributionHistory:
    """Every quantity of the open run read so far, and the cursor of the next read."""

    cursor: int = 0
    by_name: dict[str, StepValues] = field(default_factory=dict)

    def absorb(self, rows: Iterable[Any], next_cursor: int) -> set[str]:
        """Add distribution rows (``.step``, ``.name``, ``.count``, ``.values``) read up to
        ``next_cursor``; returns the names that changed."""
        changed: set[str] = set()
        for row in rows:
            self.by_name.setdefault(row.name, StepValues()).add(row.step, row.count, row.values)
            changed.add(row.name)
        self.cursor = max(self.cursor, next_cursor)
        return changed
