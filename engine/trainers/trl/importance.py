"""Truncated importance sampling for completions sampled one update ago (``training.rollout:
async``, :mod:`.rollout_ahead`).

A step's policy gradient ``sum A * grad log pi_theta(y)`` is unbiased only for completions
``y`` drawn from ``pi_theta``; an async step's were drawn from ``pi_old``, the weights one update
earlier. Each token's term is weighed by ``w = min(pi_theta(y) / pi_old(y), C)``: truncated
importance sampling (Ionides 2008, "Truncated Importance Sampling"; for RL's sampler mismatch Yao
et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training"), as TRL
1.16's GRPOTrainer corrects vLLM's samples (``_generate_and_score_completions``, mode
``token_truncate``, ``C`` = 3, its ``vllm_importance_sampling_clip_max`` default). ``pi_old`` is
the sampler's own log-probability of each token; ``pi_theta`` the trainer's, from an older copy
where TRL computed one (``old_per_token_logps``), as TRL does.
"""

from __future__ import annotations

import torch

from engine.tracking import metric_names

#: Most weight one token's term may get (TRL's ``vllm_importance_sampling_clip_max`` default).
CAP = 3.0


def importance_weights(
    trainer_logps: torch.Tensor,
    sampler_logps: torch.Tensor,
    mask: torch.Tensor,
    cap: float = CAP,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(weights, clipped)`` for (B, T) log-probabilities of the sampled tokens: ``weights =
    min(exp(trainer - sampler), cap)``, 1 where ``mask`` is 0; ``clipped``: where the ratio
    exceeded ``cap``."""
    diff = (trainer_logps.detach().float() - sampler_logps.float()) * mask
    ratio = torch.exp(diff)
    return ratio.clamp(max=cap), (ratio > cap) & mask.bool()


def weighted_logps(logps: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``logps`` unchanged in value, their gradient multiplied by ``weights``.

    TRL's loss is ``-min(r A, clip(r) A)`` with ``r = exp(logps - old)``; its gradient is linear
    in each token's ``grad logps``, so scaling that gradient by ``w`` is TRL's product of the
    per-token loss with ``w``, without changing the values the loss and its metrics read.
    (A KL term to a reference, ``beta`` > 0, is weighed too: an importance-weighted estimate.)
    """
    detached = logps.detach()
    return detached + weights.to(logps.dtype) * (logps - detached)


def record_weights(
    metrics: dict[str, list[float]],
    weights: torch.Tensor,
    clipped: torch.Tensor,
    mask: torch.Tensor,
) -> None:
    """The token mean of ``weights`` and the share of tokens clipped, over ``mask``."""
    total, clipped_count, count = torch.stack(
        [(weights * mask).sum(), clipped.sum().float(), mask.sum().float()]
    ).tolist()
    if count:  # every row masked (truncated completions): no token to weigh
        metrics[metric_names.GEN_IS_RATIO_MEAN].append(total / count)
        metrics[metric_names.GEN_IS_CLIPPED_SHARE].append(clipped_count / count)
