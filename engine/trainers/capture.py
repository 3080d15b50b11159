"""Capture each generation batch inside TRL's trainers so samples can be stored with traces.

TRL 1.16 keeps the last batch's prompts, completions and advantages in ``trainer._logs`` but not
the dataset columns (the gold answer) nor token ids; we keep those from ``_calculate_rewards``,
which both GRPOTrainer and RLOOTrainer call once per generation batch with the same signature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accelerate.utils import gather_object

if TYPE_CHECKING:
    from rewards.composer import ScoredSample


@dataclass
class GenerationBatch:
    """One generation batch across all processes, in TRL's group order (prompt-major)."""

    prompts: list[Any]
    completions: list[Any]
    answers: list[Any]
    completion_ids: list[list[int]]
    advantages: list[float] = field(default_factory=list)
    # Set when the trainer scored the batch with the run's RewardSpec (PPO's rollout.scored).
    scored: list[ScoredSample] | None = None


class BatchCaptureMixin:
    """Mixed in before a TRL trainer class; exposes :meth:`pop_generation_batch`."""

    _captured_batch: GenerationBatch | None = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        answers = [example.get("answer") for example in inputs]
        ids = [list(map(int, ids)) for ids in completion_ids_list]
        # Every process must take part in the gather; only the main one keeps the result.
        batch = GenerationBatch(
            prompts=gather_object(list(prompts)),
            completions=gather_object(list(completions)),
            answers=gather_object(answers),
            completion_ids=gather_object(ids),
        )
        if self.accelerator.is_main_process:
            self._captured_batch = batch
        return rewards_per_func

    def pop_generation_batch(self) -> GenerationBatch | None:
        """The batch generated since the last call (with its advantages), or ``None``."""
        batch, self._captured_batch = self._captured_batch, None
        if batch is not None:
            advantages = list(self._logs["advantages"])[-len(batch.completions) :]
            batch.advantages = [float(a) for a in advantages]
        return batch
