"""Reward-weight schedules in TRL's trainers: set the weights in force before every step.

TRL 1.16's GRPOTrainer and RLOOTrainer multiply each reward function's scores by the tensor
``trainer.reward_weights`` when they score a generation batch, and log ``reward`` from the same
product (``GRPOTrainer._generate_and_score_completions``). :class:`WeightScheduleCallback`
overwrites that tensor in place at ``on_step_begin``, before the step generates, with the spec's
weights for the step about to be trained (``state.global_step + 1``, the number the Runs view
shows), so the advantages and the logged ``reward`` both use the scheduled weights; and records
each scheduled weight as ``reward/weight/<name>`` at that step. (TRL issue 3036 asks for this;
its pull requests 5657 and 5670 were closed unmerged.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import TrainerCallback

from engine.tracking.metric_names import weight_metric
from rewards.spec import RewardSpec


def scheduled_weights(spec: RewardSpec, step: int) -> dict[str, float]:
    """``reward/weight/<name>`` -> weight in force at ``step``, for each scheduled component."""
    return {
        weight_metric(name): comp.weight_at(step)
        for name, comp in spec.enabled_components()
        if comp.schedule is not None
    }


class WeightScheduleCallback(TrainerCallback):
    """Sets ``weights`` (the trainer's ``reward_weights`` tensor) to the spec's weights at the
    step about to be trained, and hands the scheduled ones to ``record(step, metrics)``."""

    def __init__(
        self,
        spec: RewardSpec,
        weights: torch.Tensor,
        record: Callable[[int, dict[str, float]], None],
    ) -> None:
        self.spec = spec
        self.weights = weights
        self.record = record

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = state.global_step + 1
        values = self.spec.weights_at(step)
        with torch.no_grad():
            self.weights.copy_(torch.tensor(values, dtype=self.weights.dtype))
        self.record(step, scheduled_weights(self.spec, step))
