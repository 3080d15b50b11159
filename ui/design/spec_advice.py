"""Advice the Design form shows on a valid spec: a penalty component given a negative weight
pays for what it should punish."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rewards.composer import score
from rewards.spec import ComponentSpec, RewardSpec

if TYPE_CHECKING:
    from ui.design.spec_form import Slot

# Completions a penalty component scores below zero (a repeated phrase, a long ramble) next to a
# plain correct one: enough to tell a penalty (never above 0) from a reward.
PENALTY_PROBES = (
    "the same words again " * 40,
    "<think>" + "and then " * 400 + "</think><answer>2</answer>",
    "<think>1 + 1 = 2</think><answer>2</answer>",
)


def is_penalty(component: ComponentSpec) -> bool:
    """True when the component scores the probe completions at or below 0 and some below:
    its score is a penalty, so a negative weight would pay for the failure it measures."""
    one = RewardSpec([ComponentSpec(component.name, 1.0, params=dict(component.params))])
    n = len(PENALTY_PROBES)
    try:
        scored = score(one, ["What is 1 + 1?"] * n, list(PENALTY_PROBES), answers=["2"] * n)
    except Exception:  # a component that cannot score the probes gives no advice
        return False
    raws = [t.raw for s in scored for t in s.trace if t.raw is not None]
    return bool(raws) and max(raws) <= 0 and min(raws) < 0


def negative_weight_warnings(spec: RewardSpec, origins: Sequence[Slot]) -> dict[str, str]:
    """A warning on the weight of each penalty component given a negative weight."""
    return {
        f"{slot.key}.weight": (
            f"{slot.label} scores the failure it measures below 0 (a penalty); a negative weight "
            "turns that into a reward for it. Use a positive weight."
        )
        for comp, slot in zip(spec.components, origins, strict=True)
        if comp.weight < 0 and is_penalty(comp)
    }
