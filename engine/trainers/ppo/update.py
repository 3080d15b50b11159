"""PPO's update: ``ppo.ppo_epochs`` passes over shuffled minibatches, each split into
micro-batches whose token-weighted losses add up to the minibatch's token mean (Schulman et al.
2017; cleanrl ``ppo.py``'s epoch and minibatch loop), over the policy it is given
(:class:`~engine.trainers.ppo.policy.PolicyParts`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import statistics
from typing import Any

import torch

from engine.config.run_config import RunConfig
from engine.trainers.finite_updates import UpdateGuard
from engine.trainers.ppo.formulas import ppo_loss
from engine.trainers.ppo.policy import PolicyParts
from engine.trainers.ppo.rollout import (
    Forward,
    Rollout,
    completion_forward,
    entropy_mode,
    micro_size,
)
from engine.trainers.ppo.value_warmup import critic_only, in_warmup

logger = logging.getLogger(__name__)


class PolicyUpdate:
    """The optimisation of each step: the policy and critic in ``parts`` by ``optimizer``."""

    def __init__(
        self, config: RunConfig, parts: PolicyParts, optimizer: Any, guard: UpdateGuard
    ) -> None:
        self.config = config
        self.settings = config.ppo
        self.parts = parts
        self.accelerator = parts.accelerator
        self.optimizer = optimizer
        self.guard = guard  # drops an update whose gradients are NaN or infinite

    def update(
        self,
        rollout: Rollout,
        advantages: torch.Tensor,
        step: int,
        forward: Forward | None = None,
    ) -> dict[str, float]:
        """``ppo_epochs`` passes of shuffled minibatch updates; returns mean diagnostics.

        ``forward`` is the single-pass step's forward from
        :meth:`~engine.trainers.ppo.rollout.Rollouts.evaluate_rollout`.
        """
        s, t = self.settings, self.config.training
        model, mean_across = self.parts.model, self.parts.mean_across
        mask = rollout.response_mask
        n = mask.shape[0]
        seed = (t.seed * 7_919 + step * 31 + self.accelerator.process_index) % 2**31
        gen = torch.Generator().manual_seed(seed)  # minibatch order: a function of the step
        sums: dict[str, float] = {}
        updates = 0
        grad_norms = []
        stop_early = False
        for _ in range(s.ppo_epochs):
            order = torch.randperm(n, generator=gen) if forward is None else torch.arange(n)
            for minibatch in order.tensor_split(s.num_minibatches):
                tokens = mask[minibatch].sum().clamp(min=1)
                micro_batches = minibatch.split(micro_size(self.config, len(minibatch)))
                self.optimizer.zero_grad(set_to_none=True)
                mb_stats: dict[str, float] = {}
                for k, rows in enumerate(micro_batches):
                    sync = k == len(micro_batches) - 1
                    context = contextlib.nullcontext() if sync else self.accelerator.no_sync(model)
                    with context:
                        if forward is not None:
                            (logprobs, values, entropy), forward = forward, None
                        else:
                            logprobs, values, entropy = completion_forward(
                                model,
                                rollout.input_ids[rows],
                                rollout.attention_mask[rows],
                                rollout.context_length,
                                self.config.generation.temperature,
                                entropy_mode(s),
                            )
                        loss, stats = ppo_loss(
                            logprobs,
                            values,
                            entropy,
                            rollout.logprobs[rows],
                            rollout.values[rows],
                            advantages[rows],
                            rollout.returns[rows],
                            mask[rows],
                            clip_range=s.clip_range,
                            clip_range_value=s.clip_range_value,
                            vf_coef=s.vf_coef,
                            entropy_coef=s.entropy_coef,
                        )
                        # Token-weighted, so micro-batches add up to the minibatch's token mean.
                        weight = mask[rows].sum() / tokens
                        self.guard.losses.add(loss)
                        self.accelerator.backward(loss * weight)
                    for key, value in stats.items():
                        mb_stats[key] = mb_stats.get(key, 0.0) + float(value * weight)
                grad_norm = self.accelerator.clip_grad_norm_(model.parameters(), t.max_grad_norm)
                if self.guard.allow(model, step):
                    grad_norms.append(float(grad_norm))
                    with critic_only(self.optimizer, in_warmup(step, s.value_warmup_steps)):
                        self.optimizer.step()
                updates += 1
                for key, value in mb_stats.items():
                    sums[key] = sums.get(key, 0.0) + value
                kl_now = mean_across(mb_stats["approx_kl"])
                if s.max_approx_kl is not None and kl_now > s.max_approx_kl:
                    stop_early = True
                    break
            if stop_early:
                logger.info(
                    "approx KL %.4f > %.4f: ending this step's updates", kl_now, s.max_approx_kl
                )
                break
        means = {key: mean_across(value / updates) for key, value in sums.items()}
        # NaN where every update of the step was skipped (not stored: metrics are finite)
        means["grad_norm"] = mean_across(statistics.fmean(grad_norms) if grad_norms else math.nan)
        means["epochs"] = updates / s.num_minibatches
        return means
