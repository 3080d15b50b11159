"""One spec value as the Design form's input shows it and back: parameters, metric names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rewards.errors import RewardSpecError
from rewards.params import ParamSpec
from rewards.spec import ComponentSpec, RewardSpec

if TYPE_CHECKING:
    from ui.design.spec_form import Slot


def param_to_form(param: ParamSpec, value: Any) -> Any:
    """A parameter value as its input shows it (lists as one item per line)."""
    if param.type == "list":
        return "\n".join(str(v) for v in (value or ()))
    return value


def param_from_form(param: ParamSpec, raw: Any) -> Any:
    """An input's value as the parameter takes it (before the registry validates it)."""
    if param.type == "list":
        if isinstance(raw, (list, tuple)):
            return list(raw)
        return [line.strip() for line in str(raw or "").splitlines() if line.strip()]
    if param.type == "int" and isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if param.type == "str" and raw is None:
        return ""
    return raw


def label_from_form(raw: Any) -> str | None:
    """The metric-name input as a label: ``None`` when empty (the default name)."""
    text = str(raw or "").strip()
    return text or None


def label_error(slot: Slot, label: str | None) -> str | None:
    """Why ``label`` cannot be a metric name (the spec's own rule), or ``None`` when it can."""
    if label is None:
        return None
    try:
        RewardSpec([ComponentSpec(slot.info.name, 1.0, {}, label=label)])
    except RewardSpecError as exc:
        if exc.field.endswith(".label"):
            return exc.reason
    return None
