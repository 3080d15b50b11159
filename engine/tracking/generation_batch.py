"""One generation batch as the sample view stores it, from TRL's trainers and from our PPO."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewards.composer import ScoredSample


@dataclass
class GenerationBatch:
    """One generation batch across all processes, in group order (prompt-major)."""

    prompts: list[Any]
    completions: list[Any]
    answers: list[Any]
    completion_ids: list[list[int]]
    advantages: list[float] = field(default_factory=list)
    # Set when the trainer scored the batch with the run's RewardSpec (PPO's rollout.scored).
    scored: list[ScoredSample] | None = None
    # TRL's trainers: each completion's raw score per reward function (NaN: not scored), the
    # functions in the spec's enabled order (``rewards.trl_adapter.to_trl``).
    rewards_per_func: list[list[float]] | None = None
