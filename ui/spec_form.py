"""The Design form as data: slots generated from the reward registry (no Gradio here).

The form holds one *slot* per registry component (several for components that allow more than
one instance, such as ``rule``); each slot has an enable switch, a weight and one input per
:class:`~rewards.params.ParamSpec`. :class:`SpecForm` maps the form's flat list of values to a
``RewardSpec`` and back, and :meth:`SpecForm.check` validates them, putting each message on the
input it is about (``"correctness.mode"``, ``"rule#2.weight"``), so the tab can show it there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewards.errors import RewardSpecError
from rewards.params import ComponentInfo, ParamSpec
from rewards.registry import REGISTRY
from rewards.spec import RewardSpec
from ui.messages import escape, ok, warn

MULTI_SLOTS = 3  # instances offered for components that allow several (e.g. rule)
GENERAL = ""  # error key of messages about the spec as a whole


@dataclass(frozen=True)
class Slot:
    """One component instance in the form."""

    info: ComponentInfo
    instance: int = 1

    @property
    def key(self) -> str:
        return self.info.name if self.instance == 1 else f"{self.info.name}#{self.instance}"

    @property
    def label(self) -> str:
        return self.info.name if self.instance == 1 else f"{self.info.name} #{self.instance}"

    @property
    def size(self) -> int:
        """Inputs of this slot: enabled, weight, then one per parameter."""
        return 2 + len(self.info.params)


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


@dataclass
class FormCheck:
    """The outcome of validating the form.

    Attributes:
        spec: the valid spec, or ``None`` when any field is wrong.
        errors: input key (``"format.mode"``, ``"rule#2.weight"``, ``""`` for the whole spec)
            -> message.
    """

    spec: RewardSpec | None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.errors

    def summary(self) -> str:
        if self.ok:
            assert self.spec is not None
            parts = [f"{name} × {c.weight:g}" for name, c in self.spec.enabled_components()]
            return ok("Valid reward: " + " + ".join(parts))
        n = len(self.errors)
        return warn(
            f"{n} field{'s' if n != 1 else ''} to fix: "
            + "; ".join(f"{k or 'reward'}: {escape(v)}" for k, v in self.errors.items())
        )


class SpecForm:
    """The slots of the Design form and the conversions between its values and a spec."""

    def __init__(
        self, registry: Mapping[str, ComponentInfo] | None = None, multi_slots: int = MULTI_SLOTS
    ) -> None:
        registry = REGISTRY if registry is None else registry
        self.slots: list[Slot] = []
        for info in registry.values():
            count = multi_slots if info.allow_multiple else 1
            self.slots.extend(Slot(info, i + 1) for i in range(count))

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slots)

    def input_keys(self) -> list[str]:
        """The key of every input in value order (``"format.enabled"``, ``"format.weight"``,
        ``"format.mode"``, ...)."""
        keys = []
        for slot in self.slots:
            keys += [f"{slot.key}.enabled", f"{slot.key}.weight"]
            keys += [f"{slot.key}.{p.name}" for p in slot.info.params]
        return keys

    def split(self, values: Sequence[Any]) -> list[tuple[Slot, bool, Any, dict[str, Any]]]:
        """``(slot, enabled, weight, params)`` per slot from the flat values."""
        if len(values) != self.size:
            raise ValueError(f"expected {self.size} form values, got {len(values)}")
        out, at = [], 0
        for slot in self.slots:
            enabled, weight = bool(values[at]), values[at + 1]
            raw = values[at + 2 : at + slot.size]
            params = {
                p.name: param_from_form(p, v) for p, v in zip(slot.info.params, raw, strict=True)
            }
            out.append((slot, enabled, weight, params))
            at += slot.size
        return out

    def check(self, values: Sequence[Any]) -> FormCheck:
        """Validate every slot's weight and parameters, then the spec as a whole."""
        errors: dict[str, str] = {}
        components: list[dict[str, Any]] = []
        origins: list[Slot] = []
        for slot, enabled, weight, params in self.split(values):
            for p in slot.info.params:
                try:
                    p.validate(params[p.name])
                except RewardSpecError as exc:
                    errors[f"{slot.key}.{p.name}"] = exc.reason
            weight_ok = False
            if weight is None or isinstance(weight, bool) or not isinstance(weight, (int, float)):
                errors[f"{slot.key}.weight"] = "must be a number"
            elif not math.isfinite(weight):
                errors[f"{slot.key}.weight"] = f"must be a finite number, got {weight}"
            else:
                weight_ok = True
            if not enabled:
                continue
            if slot.info.check is not None and not any(
                k.startswith(slot.key + ".") for k in errors
            ):
                try:
                    slot.info.validate_params(params)
                except RewardSpecError as exc:
                    errors[f"{slot.key}.{exc.field}" if exc.field else slot.key] = exc.reason
            components.append(component_dict(slot, weight if weight_ok else 0.0, params))
            origins.append(slot)
        if not components:
            errors[GENERAL] = "enable at least one component"
        if errors:
            return FormCheck(None, errors)
        try:
            spec = RewardSpec.from_dict({"components": components})
        except RewardSpecError as exc:
            return FormCheck(None, {self._locate(exc.field, origins): exc.reason})
        return FormCheck(spec, {})

    def _locate(self, spec_field: str, origins: Sequence[Slot]) -> str:
        """Map a spec error field (``components[1].params.max_len``) to an input key."""
        if spec_field.startswith("components["):
            index_text, _, rest = spec_field[len("components[") :].partition("]")
            if index_text.isdigit() and int(index_text) < len(origins):
                slot = origins[int(index_text)]
                rest = rest.lstrip(".").removeprefix("params.")
                return f"{slot.key}.{rest}" if rest else slot.key
        return GENERAL

    def values_from_spec(self, spec: RewardSpec) -> list[Any]:
        """Form values showing ``spec``: its components fill the matching slots in order."""
        by_name: dict[str, list[Any]] = {}
        for comp in spec.components:
            by_name.setdefault(comp.name, []).append(comp)
        values: list[Any] = []
        for slot in self.slots:
            present = by_name.get(slot.info.name, [])
            comp = present[slot.instance - 1] if len(present) >= slot.instance else None
            params = {**slot.info.defaults(), **(dict(comp.params) if comp else {})}
            values.append(comp is not None and comp.enabled)
            values.append(float(comp.weight) if comp is not None else 1.0)
            values.extend(param_to_form(p, params[p.name]) for p in slot.info.params)
        return values


def component_dict(slot: Slot, weight: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """The spec entry of one enabled slot (disabled slots are left out of the spec)."""
    return {
        "name": slot.info.name,
        "weight": float(weight),
        "params": dict(params),
        "enabled": True,
    }
