"""Keep each generation batch inside TRL's trainers so samples can be stored with traces.

TRL 1.16 keeps the last batch's prompts, completions and advantages in ``trainer._logs`` but not
the dataset columns (the gold answer), token ids nor each reward function's scores; the trainers
keep those from ``_calculate_rewards``, which GRPOTrainer and RLOOTrainer both call once per
generation batch (its return value, ``rewards_per_func``, is already gathered across processes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from accelerate.utils import gather_object

from engine.tracking.generation_batch import GenerationBatch

if TYPE_CHECKING:
    import torch


def gathered_batch(
    inputs: list[dict[str, Any]],
    prompts: Sequence[Any],
    completions: Sequence[Any],
    completion_ids: Sequence[Sequence[int]],
    rewards_per_func: torch.Tensor | None = None,
) -> GenerationBatch:
    """The batch across all processes; every process must call it (a gather), and only the
    main one should keep the result."""
    return GenerationBatch(
        prompts=gather_object(list(prompts)),
        completions=gather_object(list(completions)),
        answers=gather_object([example.get("answer") for example in inputs]),
        completion_ids=gather_object([list(map(int, ids)) for ids in completion_ids]),
        rewards_per_func=None if rewards_per_func is None else rewards_per_func.float().tolist(),
    )


def with_advantages(batch: GenerationBatch | None, logs: dict[str, Any]) -> GenerationBatch | None:
    """``batch`` with the advantages TRL logged for it (the newest ones in ``logs``)."""
    if batch is not None:
        advantages = list(logs["advantages"])[-len(batch.completions) :]
        batch.advantages = [float(a) for a in advantages]
    return batch
