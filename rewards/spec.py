"""RewardSpec: which components make up a reward, with what weights and parameters.

A spec is the one description of a reward that the UI form, the CLI, stored runs and the
trainer share. It validates on construction (``__post_init__``) and round-trips through
dicts, JSON and YAML. Every problem raises :class:`RewardSpecError`, whose message and
``.field`` name the offending field (``components[1].params.max_len``).

Metric names: each enabled or disabled component gets one, used as the reward function's
``__name__`` and so as TRL's ``rewards/<name>/mean`` key. It is the component's ``label`` when
set, else the component name for its first occurrence and ``<name>_2``, ``<name>_3``… for later
ones, counted in spec order over all components (toggling ``enabled`` never renames another).
Only components whose registry entry allows it (``rule``, ``conciseness``) may appear twice.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from rewards.errors import RewardSpecError
from rewards.input_guards.structured_text import TextFormatError, load_structured
from rewards.params import (
    Bounds,
    describe_value,
    refuse_unknown_keys,
    text_problem,
)
from rewards.presets import PRESET_DATA
from rewards.registry import REGISTRY
from rewards.schedule import WeightSchedule

__all__ = [
    "DEFAULT_PRESET",
    "PRESETS",
    "WEIGHT_BOUNDS",
    "ComponentSpec",
    "RewardSpec",
    "RewardSpecError",
    "preset",
]

SPEC_VERSION = 1
#: Largest allowed absolute weight.
MAX_ABS_WEIGHT = 100.0
#: The range of a component's weight.
WEIGHT_BOUNDS = Bounds(-MAX_ABS_WEIGHT, MAX_ABS_WEIGHT)
_LABEL_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")
_COMPONENT_FIELDS = ("name", "weight", "params", "enabled", "label", "schedule")
_SPEC_FIELDS = ("version", "components", "description", "aggregation")
#: How TRL combines the weighted components into the advantage (GRPOConfig's
#: ``multi_objective_aggregation``): a weighted sum normalised per group (the default), or each
#: component normalised in its group, then weighted and summed (GDPO).
AGGREGATIONS = ("sum_then_normalize", "normalize_then_sum")
# Bounds the work one spec can ask of a scoring call (the web form holds at most 70: 20 of each
# component that may repeat, one of each other).
MAX_COMPONENTS = 100
#: The longest spec text read (a spec of MAX_COMPONENTS components is far shorter).
MAX_SPEC_CHARS = 1_000_000


@dataclass
class ComponentSpec:
    """One component of a reward.

    Attributes:
        name: registry name (``correctness``, ``format``, ...).
        weight: multiplies the component's score in the total; finite, |weight| <= 100.
        params: the component's parameters; missing ones take their registry defaults.
        enabled: a disabled component is kept in the spec but neither scored nor exported.
        label: optional metric name (lower-case letters, digits, ``_``; 1-40 characters).
        schedule: how the weight moves over training steps, from ``weight`` (None: constant);
            see :mod:`rewards.schedule`.
    """

    name: str
    weight: float = 1.0
    params: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    label: str | None = None
    schedule: WeightSchedule | None = None

    def weight_at(self, step: int) -> float:
        """The weight in force at training step ``step``."""
        return self.weight if self.schedule is None else self.schedule.value(self.weight, step)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "weight": self.weight,
            "params": copy.deepcopy(self.params),
            "enabled": self.enabled,
        }
        if self.label is not None:
            out["label"] = self.label
        if self.schedule is not None:
            out["schedule"] = self.schedule.to_dict()
        return out


@dataclass
class RewardSpec:
    """A weighted reward: a list of components (see the module docstring for metric names).

    ``aggregation`` is TRL's ``multi_objective_aggregation`` (see :data:`AGGREGATIONS`).

    Validation (on construction): at least one enabled component, known component names, valid
    parameters, finite weights, not all enabled weights zero, unique metric names.
    """

    components: list[ComponentSpec]
    description: str = ""
    aggregation: str = "sum_then_normalize"

    def __post_init__(self) -> None:
        self.validate()

    # ----------------------------------------------------------------- validation
    def validate(self) -> None:
        """Check the spec and normalise parameters (defaults filled in); raises RewardSpecError."""
        if not isinstance(self.components, list):
            raise RewardSpecError("components", "must be a list of components")
        if not self.components:
            raise RewardSpecError("components", "must hold at least one component")
        if len(self.components) > MAX_COMPONENTS:
            raise RewardSpecError(
                "components",
                f"at most {MAX_COMPONENTS} components, got {len(self.components)} "
                "(each one scores every completion)",
            )
        if not isinstance(self.description, str) or len(self.description) > 2000:
            raise RewardSpecError("description", "must be a string of at most 2000 characters")
        problem = text_problem(self.description)
        if problem:
            raise RewardSpecError("description", problem)
        if self.aggregation not in AGGREGATIONS:
            raise RewardSpecError(
                "aggregation",
                f"must be one of {', '.join(AGGREGATIONS)}, got {describe_value(self.aggregation)}",
            )
        seen: dict[str, int] = {}
        for i, comp in enumerate(self.components):
            where = f"components[{i}]"
            if isinstance(comp, Mapping):
                comp = self.components[i] = _component_from_dict(comp, where)
            if not isinstance(comp, ComponentSpec):
                raise RewardSpecError(where, f"must be a component, got {type(comp).__name__}")
            if not isinstance(comp.name, str) or comp.name not in REGISTRY:
                allowed = ", ".join(REGISTRY)
                raise RewardSpecError(
                    f"{where}.name",
                    f"unknown component {describe_value(comp.name)}; allowed: {allowed}",
                )
            info = REGISTRY[comp.name]
            if comp.name in seen and not info.allow_multiple:
                raise RewardSpecError(
                    f"{where}.name",
                    f"{comp.name!r} already appears at components[{seen[comp.name]}]; "
                    "only "
                    + ", ".join(n for n, i in REGISTRY.items() if i.allow_multiple)
                    + " may appear more than once",
                )
            seen.setdefault(comp.name, i)
            problem = WEIGHT_BOUNDS.problem(comp.weight)
            if problem:
                raise RewardSpecError(f"{where}.weight", problem)
            comp.weight = float(comp.weight)
            if comp.schedule is not None:
                comp.schedule = WeightSchedule.from_dict(comp.schedule, f"{where}.schedule")
                comp.schedule.check(WEIGHT_BOUNDS, f"{where}.schedule")
            if not isinstance(comp.enabled, bool):
                raise RewardSpecError(
                    f"{where}.enabled", f"must be true or false, got {describe_value(comp.enabled)}"
                )
            if comp.label is not None and (
                not isinstance(comp.label, str) or not _LABEL_RE.fullmatch(comp.label)
            ):
                raise RewardSpecError(
                    f"{where}.label",
                    "must be 1-40 lower-case letters, digits or '_', starting with a letter, "
                    f"got {describe_value(comp.label)}",
                )
            try:
                comp.params = info.validate_params(comp.params)
            except RewardSpecError as err:
                raise err.under(f"{where}.params") from None
        enabled = [c for c in self.components if c.enabled]
        if not enabled:
            raise RewardSpecError("components", "at least one component must be enabled")
        if not any(c.weight != 0.0 or (c.schedule and c.schedule.end) for c in enabled):
            raise RewardSpecError(
                "components", "all enabled weights are zero: the reward would be constant"
            )
        names = self.metric_names(all_components=True)
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise RewardSpecError(
                    f"components[{i}].label",
                    f"metric name {name!r} is already used by components[{names.index(name)}]",
                )

    # ----------------------------------------------------------------- naming
    def metric_names(self, all_components: bool = False) -> list[str]:
        """Metric names of the enabled components (or of all), in spec order."""
        counts: dict[str, int] = {}
        names = []
        for comp in self.components:
            counts[comp.name] = counts.get(comp.name, 0) + 1
            if comp.label is not None:
                name = comp.label
            elif counts[comp.name] == 1:
                name = comp.name
            else:
                name = f"{comp.name}_{counts[comp.name]}"
            if all_components or comp.enabled:
                names.append(name)
        return names

    def enabled_components(self) -> list[tuple[str, ComponentSpec]]:
        """``(metric_name, component)`` for each enabled component, in spec order."""
        names = self.metric_names(all_components=True)
        return [(n, c) for n, c in zip(names, self.components, strict=True) if c.enabled]

    @property
    def has_schedules(self) -> bool:
        """Whether any enabled component's weight changes over training."""
        return any(c.schedule is not None for _, c in self.enabled_components())

    @property
    def checks_math(self) -> bool:
        """Whether scoring may send answers to math-verify: an enabled component compares
        answers in math mode (``correctness``'s ``mode``, the length rewards'
        ``correctness_mode``)."""
        return any(
            "math" in (c.params.get("mode"), c.params.get("correctness_mode"))
            for _, c in self.enabled_components()
        )

    def weights_at(self, step: int) -> list[float]:
        """The enabled components' weights in force at training step ``step``."""
        return [c.weight_at(step) for _, c in self.enabled_components()]

    def at_step(self, step: int) -> RewardSpec:
        """This spec as it scores at ``step``: each weight the one in force, no schedules."""
        if not self.has_schedules:
            return self
        # A copy, not a new validation: every weight may be 0 at some step (a fade-out), which
        # a spec written by hand may not be; interpolated weights stay within the bounds.
        out = copy.deepcopy(self)
        for comp in out.components:
            comp.weight, comp.schedule = comp.weight_at(step), None
        return out

    def build(self) -> list[tuple[Any, float]]:
        """The reward functions of the enabled components, each with its weight."""
        return [
            (REGISTRY[c.name].build(c.params, name=name), c.weight)
            for name, c in self.enabled_components()
        ]

    # ----------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": SPEC_VERSION,
            "components": [c.to_dict() for c in self.components],
        }
        if self.description:
            out["description"] = self.description
        if self.aggregation != AGGREGATIONS[0]:  # the default stays implicit, as in TRL
            out["aggregation"] = self.aggregation
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardSpec:
        if not isinstance(data, Mapping):
            raise RewardSpecError("", f"a reward spec must be a mapping, got {type(data).__name__}")
        refuse_unknown_keys(data, _SPEC_FIELDS, "", RewardSpecError)
        version = data.get("version", SPEC_VERSION)
        if version != SPEC_VERSION:
            raise RewardSpecError(
                "version", f"must be {SPEC_VERSION}, got {describe_value(version)}"
            )
        components = data.get("components")
        if not isinstance(components, list):
            raise RewardSpecError("components", f"must be a list, got {type(components).__name__}")
        comps = [_component_from_dict(c, f"components[{i}]") for i, c in enumerate(components)]
        return cls(
            comps,
            description=data.get("description", ""),
            aggregation=data.get("aggregation", AGGREGATIONS[0]),
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    @classmethod
    def from_text(cls, text: str) -> RewardSpec:
        """A spec from its JSON or YAML text
        (:func:`rewards.input_guards.structured_text.load_structured`)."""
        try:
            return cls.from_dict(load_structured(text, MAX_SPEC_CHARS))
        except TextFormatError as err:
            raise RewardSpecError("", str(err)) from None


def _component_from_dict(data: Any, where: str) -> ComponentSpec:
    if isinstance(data, ComponentSpec):
        return data
    if not isinstance(data, Mapping):
        raise RewardSpecError(where, f"must be a mapping, got {type(data).__name__}")
    refuse_unknown_keys(data, _COMPONENT_FIELDS, where, RewardSpecError)
    if "name" not in data:
        raise RewardSpecError(f"{where}.name", "is required")
    params = data.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise RewardSpecError(f"{where}.params", f"must be a mapping, got {type(params).__name__}")
    return ComponentSpec(
        name=data["name"],
        weight=data.get("weight", 1.0),
        params=dict(params),
        enabled=data.get("enabled", True),
        label=data.get("label"),
        schedule=data.get("schedule"),
    )


#: Ready-made specs, by display name. Use :func:`preset` for a copy you may edit.
PRESETS: dict[str, RewardSpec] = {
    name: RewardSpec.from_dict(data) for name, data in PRESET_DATA.items()
}
#: The preset a new reward starts from.
DEFAULT_PRESET = "R1-style math"


def preset(name: str) -> RewardSpec:
    """A fresh copy of the preset ``name``."""
    if name not in PRESETS:
        raise RewardSpecError("preset", f"unknown preset {name!r}; allowed: {', '.join(PRESETS)}")
    return RewardSpec.from_dict(PRESETS[name].to_dict())
