"""A step's whole generation batch as distributions: one value per completion of each quantity the
Runs view draws over steps (W&B's and trackio's histogram panels).

The means the trainers log hide what GRPO practitioners look for in the spread: a reward that is
bimodal (some groups all right, some all wrong: no signal in either), advantages collapsing to 0,
and length hacking, where wrong answers grow longer while right ones do not (Liu et al. 2025,
"Understanding R1-Zero-Like Training: A Critical Perspective", show GRPO's per-response length
normalisation doing this to incorrect responses). So besides the total reward, the advantage and
the length, the lengths of right and of wrong answers are kept apart, by the run's correctness
component.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.tracking import metric_names as m
from engine.tracking.generation_batch import GenerationBatch
from rewards.composer import ScoredSample
from rewards.lab.matrix import weighted_totals
from rewards.spec import RewardSpec

#: Components whose raw score says whether the answer was right: 1 (or any score above 0) for
#: right, their ``wrong_value`` (0 or below) for wrong.
CORRECTNESS_COMPONENTS = ("correctness", "tool_answer")


def is_correct(sample: ScoredSample) -> bool | None:
    """The verdict of the sample's first correctness component: True for a raw score above 0,
    False at or below 0, None when the reward has no such component or it could not score."""
    for t in sample.trace:
        if t.component in CORRECTNESS_COMPONENTS:
            return None if t.raw is None else t.raw > 0
    return None


def scored_values(scored: Sequence[ScoredSample]) -> tuple[list[float | None], list[bool | None]]:
    """``(totals, verdicts)`` of completions the composer scored (PPO's rollouts)."""
    return [s.total for s in scored], [is_correct(s) for s in scored]


def reward_values(
    rewards_per_func: Sequence[Sequence[float]], spec: RewardSpec
) -> tuple[list[float | None], list[bool | None]]:
    """``(totals, verdicts)`` from TRL's raw score per reward function (one column per enabled
    component of ``spec``, in its order; NaN: not scored), so the batch is not scored again.
    The total is the composer's (:func:`rewards.lab.matrix.weighted_totals`: none where no
    component scored), the verdict the first correctness column's, as :func:`is_correct`."""
    enabled = [c for _, c in spec.enabled_components()]
    raw = np.asarray(rewards_per_func, dtype=np.float64)
    if raw.ndim != 2 or raw.shape[1] != len(enabled):
        raise ValueError(
            f"rewards_per_func: {raw.shape} scores for {len(enabled)} enabled components"
        )
    totals = weighted_totals(raw, np.array([c.weight for c in enabled], dtype=np.float64))
    column = next((k for k, c in enumerate(enabled) if c.name in CORRECTNESS_COMPONENTS), None)
    verdicts: list[bool | None] = [None] * raw.shape[0]
    if column is not None:
        verdicts = [None if np.isnan(v) else bool(v > 0) for v in raw[:, column]]
    return [None if np.isnan(t) else float(t) for t in totals], verdicts


def step_distributions(
    batch: GenerationBatch, totals: Sequence[float | None], verdicts: Sequence[bool | None]
) -> dict[str, list[float | None]]:
    """``{name: one value per completion}`` of ``batch``, whose completions got ``totals`` and
    ``verdicts`` (right, wrong, or None: not told); ``None`` where a completion could not be
    scored. Lengths are in tokens (``batch.completion_ids``). The split by correctness is there
    only when some completion has a verdict; the advantage only when the trainer gave one per
    completion."""
    n = len(batch.completions)
    if len(totals) != n or len(verdicts) != n:
        raise ValueError(f"scored: {len(totals)} scores for a batch of {n} completions")
    lengths = [float(len(ids)) for ids in batch.completion_ids]
    out: dict[str, list[float | None]] = {
        m.DIST_REWARD: list(totals),
        m.DIST_LENGTH: list(lengths),
    }
    if len(batch.advantages) == n:
        out[m.DIST_ADVANTAGE] = list(batch.advantages)
    if any(v is not None for v in verdicts):
        pairs = list(zip(lengths, verdicts, strict=True))
        out[m.DIST_LENGTH_CORRECT] = [n for n, right in pairs if right is True]
        out[m.DIST_LENGTH_WRONG] = [n for n, right in pairs if right is False]
    return out
