"""The Design form's weight-schedule and aggregation inputs, and the schedules' small curves.

Each slot has four schedule inputs keyed ``<slot>.schedule:<field>`` (``format.schedule:kind``,
``format.schedule:end``, ...), one per :class:`rewards.schedule.WeightSchedule` field; kind
``constant`` means no schedule. The spec's ``aggregation`` has one input keyed ``aggregation``.
The spec validates them (``components[1].schedule.end`` maps back to ``format.schedule:end``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewards.schedule import KINDS, WeightSchedule
from rewards.spec import AGGREGATIONS, RewardSpec
from ui.plots.charts import Figure
from ui.plots.lab_charts import schedule_figure

SCHEDULE_FIELDS = ("kind", "end", "start_step", "end_step")
PREFIX = "schedule:"
AGGREGATION = "aggregation"  # input key of the spec's aggregation
AGGREGATION_CHOICES = list(AGGREGATIONS)
#: Points drawn per schedule curve.
CURVE_POINTS = 60


def schedule_keys(slot_key: str) -> list[str]:
    return [f"{slot_key}.{PREFIX}{f}" for f in SCHEDULE_FIELDS]


def is_schedule_input(name: str) -> bool:
    """Whether an input name (after the slot key) is a schedule field."""
    return name.startswith(PREFIX) and name[len(PREFIX) :] in SCHEDULE_FIELDS


def schedule_values(slot_key: str, schedule: WeightSchedule | None) -> dict[str, Any]:
    """The four inputs showing ``schedule`` (None: constant, no schedule)."""
    s = schedule or WeightSchedule()
    values = {"kind": s.kind, "end": s.end, "start_step": s.start_step, "end_step": s.end_step}
    return {f"{slot_key}.{PREFIX}{f}": values[f] for f in SCHEDULE_FIELDS}


def schedule_from_values(values: Mapping[str, Any], slot_key: str) -> dict[str, Any] | None:
    """The spec's ``schedule`` entry from the inputs; None for kind ``constant`` (or empty)."""
    at = f"{slot_key}.{PREFIX}"
    kind = values[at + "kind"] or "constant"
    if kind == "constant":
        return None
    out: dict[str, Any] = {"kind": kind, "end": values[at + "end"]}
    start = values[at + "start_step"]
    out["start_step"] = int(start) if isinstance(start, float) and start.is_integer() else start
    end_step = values[at + "end_step"]
    if kind != "step" and end_step is not None:
        out["end_step"] = (
            int(end_step) if isinstance(end_step, float) and end_step.is_integer() else end_step
        )
    elif kind != "step":
        out["end_step"] = None
    return out


def input_key_of(slot_key: str, spec_rest: str) -> str:
    """The input key of a spec error below a component (``schedule.end`` -> ``...:end``)."""
    if spec_rest.startswith("schedule."):
        return f"{slot_key}.{PREFIX}{spec_rest.removeprefix('schedule.')}"
    if spec_rest == "schedule":
        return f"{slot_key}.{PREFIX}kind"
    return f"{slot_key}.{spec_rest}"


def schedule_curves(spec: RewardSpec, steps: int | None = None) -> Figure | None:
    """One small curve per scheduled component over ``steps`` (default: past the last change),
    or None when no component has a schedule."""
    scheduled = [(n, c) for n, c in spec.enabled_components() if c.schedule is not None]
    if not scheduled:
        return None
    last = max((c.schedule.end_step or c.schedule.start_step) for _, c in scheduled)
    horizon = steps or max(10, int(last * 1.25) + 1)
    xs = sorted({round(i * horizon / (CURVE_POINTS - 1)) for i in range(CURVE_POINTS)})
    xs = sorted(set(xs) | {c.schedule.start_step for _, c in scheduled})  # the step edges
    curves = {n: (xs, [c.weight_at(x) for x in xs]) for n, c in scheduled}
    return schedule_figure(curves)


__all__ = ["AGGREGATION", "AGGREGATION_CHOICES", "KINDS", "SCHEDULE_FIELDS"]
