"""One metric of a run by step, as the charts draw it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Series:
    """One metric by step; steps ascend. ``times`` (seconds since the epoch, one per point) is
    kept when the points came with one, for charts by relative time."""

    steps: list[int] = field(default_factory=list)
    values: list[float | None] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def add(self, step: int, value: float | None, time: float | None = None) -> None:
        """Append a point; a step at or before the last one replaces the tail from there.

        That happens after a resume from a checkpoint: the steps after it are trained again and
        their new points supersede the old ones the view had already read.
        """
        if self.steps and step <= self.steps[-1]:
            keep = next((i for i, s in enumerate(self.steps) if s >= step), len(self.steps))
            del self.steps[keep:]
            del self.values[keep:]
            del self.times[keep:]
        self.steps.append(step)
        self.values.append(value)
        if time is not None and len(self.times) == len(self.steps) - 1:
            self.times.append(time)

    @property
    def last(self) -> float | None:
        return next((v for v in reversed(self.values) if v is not None), None)

    def __len__(self) -> int:
        return len(self.steps)
