"""``training.rollout`` in our GRPO and RLOO trainers: what a sampling call of the step takes,
when the next step's batch goes to the worker (:mod:`.rollout_ahead`) and the loss's importance
weights (:mod:`.importance`).

The next batch is handed over as soon as this step's completions are in, so its sampling
overlaps this step's scoring, log-probabilities and update. With a KL penalty (``beta`` > 0) it
waits until the step's reference log-probabilities are computed: a LoRA run computes them by
switching its adapters off, which the worker must not see.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.generation.runner import Generation, GenerationRunner
from engine.tracking import metric_names
from engine.trainers.trl.importance import importance_weights, record_weights, weighted_logps
from engine.trainers.trl.rollout_ahead import BatchLookahead, RolloutAhead, RolloutAheadCallback
from engine.trainers.trl.sampling import SAMPLER_LOGPROBS, sample, timed


def attach_rollout_ahead(
    trainer: Any, runner: GenerationRunner | None, rollout: str
) -> tuple[RolloutAhead | None, BatchLookahead | None]:
    """The worker and the batch lookahead of an async run (None, None for a sync one, or where
    TRL samples: the worker runs our sampler)."""
    if rollout != "async" or runner is None:
        return None, None
    ahead = RolloutAhead(
        lambda prompt_ids: sample(runner, trainer, prompt_ids, switch_to_eval=False),
        runner.device,
    )
    trainer.add_callback(RolloutAheadCallback(ahead))
    return ahead, BatchLookahead()


def sample_turn(trainer: Any, prompt_ids: list[list[int]]) -> Generation:
    """This call's completions from our sampler, timed; in an async run's training steps the
    ones sampled ahead, and the next step's batch handed to the worker."""
    ahead, metrics = trainer.rollout_ahead, trainer._mode_metrics()
    if ahead is None:
        with timed(metrics, metric_names.GENERATION_TIME):
            return sample(trainer.generation_runner, trainer, prompt_ids)
    if not trainer.model.training:  # evaluation: on the worker, after the batch ahead
        with timed(metrics, metric_names.GENERATION_TIME):
            return ahead.sample_now(prompt_ids)
    out = ahead.take(prompt_ids, metrics)
    if trainer.beta == 0.0:
        submit_next(trainer)
    return out


def submit_next(trainer: Any) -> None:
    """Hand the next step's batch to the worker, once per step (none at the epoch's end)."""
    ahead, lookahead = trainer.rollout_ahead, trainer.batch_lookahead
    if ahead is None or not trainer.model.training or ahead.busy:
        return
    batch = lookahead.next_batch()
    if batch is not None:
        prompt_ids, _, _ = trainer._tokenize_prompts([row["prompt"] for row in batch])
        ahead.submit(prompt_ids)


def corrected_logps(trainer: Any, logps: torch.Tensor, inputs: dict[str, Any]) -> torch.Tensor:
    """The loss's log-probabilities ``logps`` with each token's gradient weighed by its
    truncated importance ratio, in an async run's training steps; ``logps`` otherwise."""
    sampled = inputs.get(SAMPLER_LOGPROBS)
    if trainer.rollout_ahead is None or sampled is None or not trainer.model.training:
        return logps
    mask = inputs["completion_mask"]
    trained = inputs.get("old_per_token_logps")
    weights, clipped = importance_weights(logps if trained is None else trained, sampled, mask)
    record_weights(trainer._metrics["train"], weights, clipped, mask)
    return weighted_logps(logps, weights)
