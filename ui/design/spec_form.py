"""The Design form as data: slots generated from the reward registry (no Gradio here).

The form holds the spec's description and one *slot* per component instance it shows (``rule``,
``rule#2``, ... for components that allow several); each slot has an enable switch, a weight, an
optional metric name (the component's ``label``) and one input per
:class:`~rewards.params.ParamSpec`. Values travel **by name**: a dict keyed by input key
(``"description"``, ``"correctness.weight"``, ``"rule#2.pattern"``), never by position, and the
slots shown are the ones whose keys the dict holds (no fixed pool: "Add component" adds a slot's
keys, Remove drops them). :class:`SpecForm` maps such a dict to a ``RewardSpec`` and back, and
:meth:`SpecForm.check` validates it, putting each message on the input it is about
(``"correctness.mode"``, ``"rule#2.weight"``), so the tab can show it there.
:meth:`SpecForm.target` names the spec field or :class:`~rewards.params.ParamSpec` behind each key.

Loading a spec never drops part of it without a word: a spec with more than
:data:`MAX_INSTANCES` of one component is refused (:class:`SpecDoesNotFit`), and
:meth:`SpecForm.load_notes` says which disabled components are shown unticked (unticked slots
stay out of the spec). The form orders components by registry order, which does not change any
score or metric name: a slot's default metric name is its position name (``rule_2`` for the
second ``rule`` slot) whichever other slots are ticked or removed, so unticking or removing one
slot never renames another.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rewards.errors import RewardSpecError
from rewards.params import ComponentInfo, ParamSpec
from rewards.registry import REGISTRY
from rewards.spec import WEIGHT_BOUNDS, ComponentSpec, RewardSpec
from ui.design.form_values import label_error, label_from_form, param_from_form, param_to_form
from ui.design.schedule_inputs import (
    AGGREGATION,
    input_key_of,
    is_schedule_input,
    schedule_from_values,
    schedule_keys,
    schedule_values,
)
from ui.design.spec_advice import negative_weight_warnings
from ui.shared.messages import escape, ok, warn

# Instances of one component the form shows at most (``rule#1`` to ``rule#20``): every slot is
# a dozen inputs drawn in the page; a spec with more runs from the CLI or the API.
MAX_INSTANCES = 20
GENERAL = ""  # error key of messages about the spec as a whole
DESCRIPTION = "description"  # input key of the spec's description
_COMPONENT_REF = re.compile(r"components\[(\d+)\]")
SLOT_FIELDS = ("enabled", "weight", "label")  # ComponentSpec fields every slot has an input for
FormValues = dict[str, Any]  # input key -> value, for the description and each shown slot


def most_instances(info: ComponentInfo) -> int:
    """How many instances of a component the form may show: :data:`MAX_INSTANCES`, or 1."""
    return MAX_INSTANCES if info.allow_multiple else 1


class SpecDoesNotFit(ValueError):
    """A component cannot be added or a spec cannot be shown: past :data:`MAX_INSTANCES`."""


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
    def default_metric_name(self) -> str:
        """The metric name when the label is empty (``rule``, ``rule_2``; see RewardSpec)."""
        return self.info.name if self.instance == 1 else f"{self.info.name}_{self.instance}"


class SlotValues(NamedTuple):
    """One slot's inputs, as the spec takes them (before validation)."""

    slot: Slot
    enabled: bool
    weight: Any
    label: str | None  # None: the default metric name
    params: dict[str, Any]
    schedule: dict[str, Any] | None = None  # the weight's schedule, None: constant


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
    warnings: dict[str, str] = field(default_factory=dict)  # input key -> advice; spec valid

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
    """The Design form's slots and the conversions between its values and a spec.

    The form has no fixed pool of slots: its values hold the keys of the slots it shows (a slot
    per component instance, ``rule``, ``rule#2``, ...), so a slot is added or removed by adding
    or dropping its keys. :meth:`slots_in` reads them back in registry order.
    """

    def __init__(self, registry: Mapping[str, ComponentInfo] | None = None) -> None:
        self.registry = REGISTRY if registry is None else registry
        self._order = {name: i for i, name in enumerate(self.registry)}

    def slot(self, key: str) -> Slot:
        """The slot with this key (``"format"``, ``"rule#3"``).

        Raises:
            KeyError: no registry component, an instance number the component cannot have, or
                one past :data:`MAX_INSTANCES`.
        """
        name, _, number = key.partition("#")
        info = self.registry.get(name)
        if info is None:
            raise KeyError(f"no component named {name!r}")
        if not number:
            return Slot(info)
        highest = most_instances(info)
        if not number.isdigit() or not 2 <= int(number) <= highest or number != str(int(number)):
            raise KeyError(f"no slot {key!r}: {name} may have 1 to {highest} instances")
        return Slot(info, int(number))

    def slots_in(self, values: Mapping[str, Any]) -> list[Slot]:
        """The slots whose switch is in ``values``, in registry order then instance."""
        slots = []
        for key in values:
            slot_key, _, name = key.rpartition(".")
            if name == "enabled":
                with contextlib.suppress(KeyError):  # split() names it as an unknown key
                    slots.append(self.slot(slot_key))
        return sorted(slots, key=lambda s: (self._order[s.info.name], s.instance))

    def input_keys(self, slots: Sequence[Slot]) -> list[str]:
        """The key of every input of a form showing ``slots``, in value order
        (``"description"``, ``"format.enabled"``, ``"format.weight"``, ``"format.label"``,
        ``"format.mode"``, ...)."""
        keys = [DESCRIPTION, AGGREGATION]
        for slot in slots:
            keys += self.slot_keys(slot)
        return keys

    def slot_keys(self, slot: Slot) -> list[str]:
        """The input keys of one slot: its spec fields, then one per parameter."""
        fields = [f"{slot.key}.{name}" for name in SLOT_FIELDS] + schedule_keys(slot.key)
        return fields + [f"{slot.key}.{p.name}" for p in slot.info.params]

    def target(self, key: str) -> tuple[Slot | None, str, ParamSpec | None]:
        """What input ``key`` sets: ``(slot, field, param)``; ``slot`` is None for the spec's
        description and ``param`` is None for a slot's own field (enabled, weight, label).

        Raises:
            KeyError: ``key`` is no input of this form.
        """
        if key in (DESCRIPTION, AGGREGATION):
            return None, key, None
        slot_key, _, name = key.rpartition(".")
        slot = self.slot(slot_key)
        if name in SLOT_FIELDS:
            return slot, name, None
        if is_schedule_input(name):
            return slot, "schedule", None
        for p in slot.info.params:
            if p.name == name:
                return slot, name, p
        raise KeyError(f"no form input named {key!r}")

    def split(self, values: Mapping[str, Any]) -> tuple[str, list[SlotValues]]:
        """The description and each shown slot's values from the values keyed by input key."""
        slots = self.slots_in(values)
        keys = self.input_keys(slots)
        known = frozenset(keys)
        missing = [k for k in keys if k not in values]
        unknown = [k for k in values if k not in known]
        if missing or unknown:
            raise ValueError(f"form values: missing {missing[:5]}, unknown {unknown[:5]}")
        description = str(values[DESCRIPTION] or "").strip()
        out = []
        for slot in slots:
            at = f"{slot.key}."
            params = {p.name: param_from_form(p, values[at + p.name]) for p in slot.info.params}
            label = label_from_form(values[at + "label"])
            enabled, weight = bool(values[at + "enabled"]), values[at + "weight"]
            schedule = schedule_from_values(values, slot.key)
            out.append(SlotValues(slot, enabled, weight, label, params, schedule))
        return description, out

    def check(self, values: Mapping[str, Any]) -> FormCheck:
        """Validate every slot's weight, metric name and parameters, then the spec as a whole."""
        errors: dict[str, str] = {}
        components: list[dict[str, Any]] = []
        origins: list[Slot] = []
        ticked: dict[str, int] = {}  # enabled slots so far, per component
        description, slots = self.split(values)
        for slot, enabled, weight, label, params, schedule in slots:
            for p in slot.info.params:
                try:
                    p.validate(params[p.name])
                except RewardSpecError as exc:
                    errors[f"{slot.key}.{p.name}"] = exc.reason
            # An empty input is the form's own case; any other value is judged by the spec.
            problem = "must be a number" if weight is None else WEIGHT_BOUNDS.problem(weight)
            weight_ok = problem is None
            if problem:
                errors[f"{slot.key}.weight"] = problem
            if (reason := label_error(slot, label)) is not None:
                errors[f"{slot.key}.label"] = reason
            if not enabled:
                continue
            if slot.info.check is not None and not any(
                k.startswith(slot.key + ".") for k in errors
            ):
                try:
                    slot.info.validate_params(params)
                except RewardSpecError as exc:
                    errors[f"{slot.key}.{exc.field}" if exc.field else slot.key] = exc.reason
            ticked[slot.info.name] = ticked.get(slot.info.name, 0) + 1
            if label is None and ticked[slot.info.name] != slot.instance:
                # An earlier slot of this component is unticked or removed: keep this slot's
                # own name rather than take the next free number (which would rename its metric).
                label = slot.default_metric_name
            entry = component_dict(slot, weight if weight_ok else 0.0, params, label)
            if schedule is not None:
                entry["schedule"] = schedule
            components.append(entry)
            origins.append(slot)
        if not components:
            errors[GENERAL] = "enable at least one component"
        if errors:
            return FormCheck(None, errors)
        data: dict[str, Any] = {"components": components}
        if description:
            data["description"] = description
        data[AGGREGATION] = values[AGGREGATION] or "sum_then_normalize"
        try:
            spec = RewardSpec.from_dict(data)
        except RewardSpecError as exc:
            reason = _COMPONENT_REF.sub(
                lambda m: origins[int(m[1])].label if int(m[1]) < len(origins) else m[0],
                exc.reason,
            )
            return FormCheck(None, {self._locate(exc.field, origins): reason})
        return FormCheck(spec, {}, negative_weight_warnings(spec, origins))

    def _locate(self, spec_field: str, origins: Sequence[Slot]) -> str:
        """Map a spec error field (``components[1].params.max_len``) to an input key."""
        if spec_field in (DESCRIPTION, AGGREGATION):
            return spec_field
        if spec_field.startswith("components["):
            index_text, _, rest = spec_field[len("components[") :].partition("]")
            if index_text.isdigit() and int(index_text) < len(origins):
                slot = origins[int(index_text)]
                rest = rest.lstrip(".").removeprefix("params.")
                return input_key_of(slot.key, rest) if rest else slot.key
        return GENERAL

    def _slotted(self, spec: RewardSpec) -> list[tuple[Slot, ComponentSpec]]:
        """Each of the spec's components with the slot that shows it (the n-th ``rule`` in
        ``rule#n``), in registry order; raises :class:`SpecDoesNotFit` past
        :data:`MAX_INSTANCES` of one component."""
        by_name: dict[str, list[ComponentSpec]] = {}
        for comp in spec.components:
            by_name.setdefault(comp.name, []).append(comp)
        for name, comps in by_name.items():
            if len(comps) > MAX_INSTANCES:
                raise SpecDoesNotFit(
                    f"the spec has {len(comps)} {name} components and the form holds at most "
                    f"{MAX_INSTANCES} of one component. Combine or remove some {name} "
                    "components to edit it here, or use the spec as it is: as the reward "
                    "section of a run config started with the CLI (python -m engine train) or "
                    "the API, which take any number."
                )
        pairs = [
            (Slot(self.registry[name], i + 1), comp)
            for name, comps in by_name.items()
            for i, comp in enumerate(comps)
        ]
        return sorted(pairs, key=lambda p: (self._order[p[0].info.name], p[0].instance))

    def slot_values(self, slot: Slot, comp: ComponentSpec | None = None) -> FormValues:
        """The inputs of one slot showing ``comp`` (``None``: a newly added, enabled slot with
        the component's defaults), keyed by input key."""
        params = {**slot.info.defaults(), **(dict(comp.params) if comp else {})}
        at = f"{slot.key}."
        values: FormValues = {
            at + "enabled": comp.enabled if comp is not None else True,
            at + "weight": float(comp.weight) if comp is not None else 1.0,
            at + "label": (comp.label or "") if comp is not None else "",
            **schedule_values(slot.key, comp.schedule if comp is not None else None),
        }
        for p in slot.info.params:
            values[at + p.name] = param_to_form(p, params[p.name])
        return values

    def values_from_spec(self, spec: RewardSpec) -> FormValues:
        """Form values showing ``spec``, keyed by input key: one slot per component.

        Raises:
            SpecDoesNotFit: a component has more than :data:`MAX_INSTANCES` instances.
        """
        values: FormValues = {DESCRIPTION: spec.description, AGGREGATION: spec.aggregation}
        for slot, comp in self._slotted(spec):
            values.update(self.slot_values(slot, comp))
        return values

    def shown_keys(self, spec: RewardSpec) -> list[str]:
        """The slots the form shows for ``spec``, one per component (ticked or not)."""
        return [slot.key for slot, _ in self._slotted(spec)]

    def slot_to_add(self, name: Any, shown: Sequence[str]) -> Slot:
        """The slot that "Add component" adds for ``name``: the lowest free instance.

        Raises:
            SpecDoesNotFit: ``name`` is no registry component, it allows one instance and is
                shown, or :data:`MAX_INSTANCES` of it are.
        """
        info = self.registry.get(name) if isinstance(name, str) else None
        if info is None:
            raise SpecDoesNotFit(f"pick a component to add ({', '.join(self.component_names)})")
        highest = most_instances(info)
        for instance in range(1, highest + 1):
            slot = Slot(info, instance)
            if slot.key not in shown:
                return slot
        if highest == 1:
            raise SpecDoesNotFit(f"{name} is in the form already; a spec holds one {name}")
        raise SpecDoesNotFit(f"the form holds at most {MAX_INSTANCES} {name} components")

    def without_slot(self, values: Mapping[str, Any], key: str) -> FormValues:
        """``values`` with slot ``key`` removed."""
        return {k: v for k, v in values.items() if k.rpartition(".")[0] != key}

    @property
    def component_names(self) -> list[str]:
        return list(self.registry)

    def load_notes(self, spec: RewardSpec) -> list[str]:
        """What a user should know after loading ``spec`` into the form (may be empty)."""
        disabled = [slot.label for slot, comp in self._slotted(spec) if not comp.enabled]
        if not disabled:
            return []
        n = len(disabled)
        return [
            f"{n} disabled component{'s are' if n != 1 else ' is'} shown unticked "
            f"({', '.join(disabled)}); {'they stay' if n != 1 else 'it stays'} out of the spec "
            "until ticked."
        ]


def component_dict(
    slot: Slot, weight: Any, params: Mapping[str, Any], label: str | None = None
) -> dict[str, Any]:
    """The spec entry of one enabled slot (disabled slots are left out of the spec)."""
    out = {"name": slot.info.name, "weight": float(weight), "params": dict(params), "enabled": True}
    if label is not None:
        out["label"] = label
    return out
