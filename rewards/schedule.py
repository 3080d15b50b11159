"""Weight schedules: a component's weight as a function of the training step.

A schedule starts from the component's ``weight`` and moves to ``end``:

- ``constant``: ``weight`` at every step (the same as no schedule);
- ``linear``: ``weight`` up to ``start_step``, then a straight line to ``end`` at ``end_step``,
  ``end`` after it;
- ``step``: ``weight`` before ``start_step``, ``end`` from it on;
- ``cosine``: ``weight`` up to ``start_step``, then half a cosine down (or up) to ``end`` at
  ``end_step``, ``w = end + (weight - end) * (1 + cos(pi * progress)) / 2`` (the cosine
  annealing of Loshchilov & Hutter 2017, "SGDR", without restarts), ``end`` after it.

Steps are the optimizer steps as the Runs view numbers them: the first training step is 1, and
the weight at step ``s`` scores the completions generated for step ``s``. TRL asked for this in
its issue 3036 (pull requests 5657 and 5670 were closed unmerged); here a callback sets the
trainer's ``reward_weights`` before each step (see ``engine.trainers.weight_schedule``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewards.errors import RewardSpecError
from rewards.params import Bounds, describe_value, refuse_unknown_keys

KINDS = ("constant", "linear", "step", "cosine")
#: The range of a schedule's steps (a run has at most this many).
STEP_BOUNDS = Bounds(0, 10_000_000)
_FIELDS = ("kind", "end", "start_step", "end_step")


@dataclass(frozen=True)
class WeightSchedule:
    """How a component's weight moves over training steps (see the module docstring).

    Attributes:
        kind: ``constant``, ``linear``, ``step`` or ``cosine``.
        end: the weight the schedule reaches (not for ``constant``).
        start_step: where the change starts (``step``: where the weight switches).
        end_step: where ``linear`` and ``cosine`` reach ``end``; greater than ``start_step``.
    """

    kind: str = "constant"
    end: float | None = None
    start_step: int = 0
    end_step: int | None = None

    def check(self, weight_bounds: Bounds, where: str = "schedule") -> None:
        """Raise :class:`RewardSpecError` naming the first bad field under ``where``."""
        if self.kind not in KINDS:
            raise RewardSpecError(
                f"{where}.kind",
                f"must be one of {', '.join(KINDS)}, got {describe_value(self.kind)}",
            )
        if self.kind == "constant":
            for name in ("end", "end_step"):
                if getattr(self, name) is not None:
                    raise RewardSpecError(f"{where}.{name}", "a constant schedule takes no " + name)
            return
        problem = weight_bounds.problem(self.end)
        if problem:
            raise RewardSpecError(f"{where}.end", problem)
        if not _whole(self.start_step) or not STEP_BOUNDS.contains(self.start_step):
            raise RewardSpecError(
                f"{where}.start_step",
                f"must be a whole number in {STEP_BOUNDS.describe()}, "
                f"got {describe_value(self.start_step)}",
            )
        if self.kind == "step":
            if self.end_step is not None:
                raise RewardSpecError(
                    f"{where}.end_step",
                    "a step schedule switches at start_step; leave end_step out",
                )
            return
        bounds = Bounds(self.start_step, STEP_BOUNDS.hi, lo_open=True)
        if not _whole(self.end_step) or not bounds.contains(self.end_step):
            raise RewardSpecError(
                f"{where}.end_step",
                f"must be a whole number in {bounds.describe()} (after start_step), "
                f"got {describe_value(self.end_step)}",
            )

    def value(self, weight: float, step: int) -> float:
        """The weight in force at ``step``, starting from ``weight``."""
        return scheduled_weight(weight, self.to_dict(), step)

    def reaches_nonzero(self, weight: float) -> bool:
        """Whether the weight is anything but 0 at some step."""
        return weight != 0.0 or (self.end is not None and self.end != 0.0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind != "constant":
            out["end"] = self.end
            out["start_step"] = self.start_step
        if self.end_step is not None:
            out["end_step"] = self.end_step
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "schedule") -> WeightSchedule:
        if isinstance(data, WeightSchedule):
            return data
        if not isinstance(data, Mapping):
            raise RewardSpecError(where, f"must be a mapping, got {type(data).__name__}")
        refuse_unknown_keys(data, _FIELDS, where, RewardSpecError)
        end = data.get("end")
        return cls(
            kind=data.get("kind", "constant"),
            end=float(end) if isinstance(end, int) and not isinstance(end, bool) else end,
            start_step=data.get("start_step", 0),
            end_step=data.get("end_step"),
        )


def scheduled_weight(weight, schedule, step):
    """The weight in force at ``step`` of a component whose weight is ``weight`` and whose
    schedule is ``schedule`` (a dict as ``WeightSchedule.to_dict`` writes it, or None).

    Standalone (``math`` only): the exported reward module carries this function's source.
    """
    kind = (schedule or {}).get("kind", "constant")
    if kind == "constant":
        return weight
    end = float(schedule["end"])
    if kind == "step":
        return end if step >= schedule["start_step"] else weight
    start_step, end_step = schedule["start_step"], schedule["end_step"]
    progress = min(1.0, max(0.0, (step - start_step) / (end_step - start_step)))
    if kind == "linear":
        return weight + (end - weight) * progress
    return end + (weight - end) * 0.5 * (1.0 + math.cos(math.pi * progress))  # cosine


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
