"""Importance weights for completions sampled from a copy of the policy that is not the policy.

Where the sampler decodes a bfloat16 copy of a float32 policy (:mod:`engine.generation.replica`),
its completions come from a distribution mu close to, but not, the trained policy pi. Without a
correction the policy gradient is the one of mu's samples, a bias that builds up over a run (Yao
et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training"). TRL
corrects its vLLM sampler the same way by default (``vllm_importance_sampling_mode=
"sequence_mask"``, ``vllm_importance_sampling_clip_max=3``): each completion's loss is weighted
by its sequence ratio pi(y) / mu(y), and completions whose ratio exceeds the cap are left out.

The weight enters through the log-probabilities the loss receives (:func:`straight_through`):
their values stay the policy's, so every logged number and the clipped ratio are unchanged,
and their gradient is scaled by the weight. With one update per generation (TRL's
``num_iterations=1``), the loss's ratio is ``exp(logp - logp.detach())`` = 1, whose gradient is
``grad logp``; scaled, it is ``w * grad logp``: TRL's ``per_token_loss * importance_ratio``.
"""

from __future__ import annotations

import torch

RATIO_CAP = 3.0  # TRL 1.16's vllm_importance_sampling_clip_max


def sequence_weights(
    logps: torch.Tensor, sampler_logps: torch.Tensor, mask: torch.Tensor, cap: float = RATIO_CAP
) -> torch.Tensor:
    """Each completion's weight pi(y) / mu(y), or 0 above ``cap``: (B, 1), no gradient.

    ``logps``: the policy's log-probabilities of the sampled tokens, (B, T); ``sampler_logps``:
    the sampler's, (B, T); ``mask``: 1 on the tokens the loss counts."""
    log_ratio = ((logps.detach().float() - sampler_logps.float()) * mask).sum(-1, keepdim=True)
    ratio = log_ratio.exp()
    return ratio.masked_fill(ratio > cap, 0.0)


def straight_through(logps: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``logps`` with the same values and its gradient scaled by ``weights`` (broadcast)."""
    held = logps.detach()
    return held + weights.to(logps.dtype) * (logps - held)
