"""Components that pay the same on every sample, and what to do about each.

GRPO's and RLOO's advantages are differences within a prompt's group (Shao et al. 2024,
DeepSeekMath §4.1; Ahmadian et al. 2024), and PPO's advantage of a constant reward is the value
baseline's to learn: a component whose raw score is the same on every sample contributes no
gradient at all, however much weight it has. The common case is a format component on a model
that never writes the tags (issue 22: an instruct model under the strict R1 format paid 0 on
every sample for a whole run), where the remedy is to make the format reachable, not to train
longer. The Preview's diagnostics and a running run (``engine.tracking.reward_watch``) both report
these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewards.spec import RewardSpec

# Fewer scored samples than this say too little to call a component constant.
MIN_SAMPLES = 8
_SAME = 1e-12


@dataclass(frozen=True)
class ConstantComponent:
    """A component whose raw score was ``value`` on all ``samples`` scored samples.

    Attributes:
        name: the component's metric name (``format``, ``correctness_2``, a label).
        component: its registry name (``format``).
        value: the one raw score it gave.
        samples: how many samples it scored.
        advice: what to try, in words.
    """

    name: str
    component: str
    value: float
    samples: int
    advice: str

    @property
    def message(self) -> str:
        return f"{self.name} paid {self.value:g} on all {self.samples} samples: {self.advice}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "component": self.component,
            "value": self.value,
            "samples": self.samples,
            "advice": self.advice,
        }


def advice(component: str, value: float, params: Mapping[str, Any] | None = None) -> str:
    """What a constant ``component`` at ``value`` (with ``params``) usually means, and what to
    try."""
    if component == "format" and value <= 0:
        tag = f"<{(params or {}).get('think_tag') or 'think'}>"
        return (
            f"the model never writes `{tag}`; try soft format, a system prompt that shows "
            f"the format, or a prefilled `{tag}`"
        )
    if component == "format":
        return "every sample is in format already; its weight could go to a graded component"
    if component == "correctness" and value <= 0:
        return (
            "no sample is correct; use prompts the model sometimes solves, a larger model, or "
            "a longer max_completion_length if answers are cut off"
        )
    if component == "correctness":
        return "every sample is correct; use harder prompts"
    return "it adds no learning signal; check its parameters against what the model writes"


def constant_components(
    traces: Iterable[Sequence[dict[str, Any]]],
    min_samples: int = MIN_SAMPLES,
    spec: RewardSpec | None = None,
) -> list[ConstantComponent]:
    """The components that gave one raw score on every scored sample.

    ``traces`` holds one trace per sample: the composer's ``ComponentTrace.to_dict()`` rows
    (``name``, ``component``, ``raw``...), in spec order. A component with fewer than
    ``min_samples`` scored samples is not judged. ``spec``, the reward that scored them, lets
    the advice name a component's own parameters (the format's think tag).
    """
    params = {name: c.params for name, c in spec.enabled_components()} if spec else {}
    seen: dict[str, tuple[str, list[float]]] = {}
    for trace in traces:
        for entry in trace:
            raws = seen.setdefault(entry["name"], (entry.get("component") or "", []))[1]
            if entry.get("raw") is not None:
                raws.append(float(entry["raw"]))
    found = []
    for name, (component, raws) in seen.items():
        if len(raws) >= min_samples and max(raws) - min(raws) <= _SAME:
            value = raws[0]
            says = advice(component, value, params.get(name))
            found.append(ConstantComponent(name, component, value, len(raws), says))
    return found
