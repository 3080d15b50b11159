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

from engine.tracking import metric_names as m
from engine.tracking.generation_batch import GenerationBatch
from rewards.composer import ScoredSample

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


def step_distributions(
    batch: GenerationBatch, scored: Sequence[ScoredSample]
) -> dict[str, list[float | None]]:
    """``{name: one value per completion}`` of ``batch`` scored as ``scored`` (aligned with its
    completions); ``None`` where a completion could not be scored. Lengths are in tokens
    (``batch.completion_ids``). The split by correctness is there only when the reward has a
    correctness component; the advantage only when the trainer gave one per completion."""
    if len(scored) != len(batch.completions):
        raise ValueError(
            f"scored: {len(scored)} scores for a batch of {len(batch.completions)} completions"
        )
    lengths = [float(len(ids)) for ids in batch.completion_ids]
    out: dict[str, list[float | None]] = {
        m.DIST_REWARD: [s.total for s in scored],
        m.DIST_LENGTH: list(lengths),
    }
    if len(batch.advantages) == len(batch.completions):
        out[m.DIST_ADVANTAGE] = list(batch.advantages)
    verdicts = [is_correct(s) for s in scored]
    if any(v is not None for v in verdicts):
        pairs = list(zip(lengths, verdicts, strict=True))
        out[m.DIST_LENGTH_CORRECT] = [n for n, right in pairs if right is True]
        out[m.DIST_LENGTH_WRONG] = [n for n, right in pairs if right is False]
    return out
