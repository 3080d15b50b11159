"""The world-model loss of agent runs: learn to predict what the tools answer.

The omniagents GRPO seed's auxiliary "world-model" loss (ECHO): *cross-entropy on the
tool-result tokens that the GRPO loss masks, scaled by* ``world_model_coeff`` *(0 = vanilla
GRPO), normalised by* ``selected_tokens`` *(token mean),* ``sequence_mean`` *or*
``seq_mean_token_sum_norm``. TRL 1.16's GRPOTrainer marks those tokens with ``tool_mask`` = 0
(its policy loss uses ``completion_mask * tool_mask``); this adds

    loss = loss_GRPO + world_model_coeff * CE(tool-result tokens) / gradient_accumulation_steps

Where ours departs: the cross-entropy reuses the log-probabilities the policy loss has just
computed (no second forward), so it is taken at the sampling temperature (TRL's fused head
divides the logits by it; at temperature 1 it is the plain cross-entropy). Rollouts without a
tool result add 0; the three normalisations are written out in :func:`world_model_loss`.
"""

from __future__ import annotations

import torch


def tool_result_mask(completion_mask: torch.Tensor, tool_mask: torch.Tensor) -> torch.Tensor:
    """1 on the tool-result tokens the GRPO loss leaves out, 0 elsewhere (padding too)."""
    return completion_mask * (1 - tool_mask)  # (B, T)


def world_model_loss(
    per_token_logps: torch.Tensor,
    world_mask: torch.Tensor,
    normalization: str,
    max_completion_length: int,
) -> torch.Tensor:
    """The mean cross-entropy ``-log p(token)`` over the tokens of ``world_mask``.

    per_token_logps: (B, T) log-probability of each completion token; world_mask: (B, T).
    ``selected_tokens``: sum over the batch's tool-result tokens / their number.
    ``sequence_mean``: each rollout's mean over its tool-result tokens, then the mean over the
    B rollouts (one without a tool result counts 0, as GRPO's mean counts every rollout).
    ``seq_mean_token_sum_norm``: each rollout's sum / ``max_completion_length`` (Dr. GRPO's
    constant normaliser, Liu et al. 2025), then the mean over rollouts.
    """
    ce = -per_token_logps * world_mask  # (B, T)
    if normalization == "selected_tokens":
        return ce.sum() / world_mask.sum().clamp(min=1.0)
    if normalization == "sequence_mean":
        return (ce.sum(-1) / world_mask.sum(-1).clamp(min=1.0)).mean()
    if normalization == "seq_mean_token_sum_norm":
        return (ce.sum(-1) / max_completion_length).mean()
    raise ValueError(f"unknown world-model loss normalization {normalization!r}")


def world_model_term(
    per_token_logps: torch.Tensor,
    inputs: dict,
    coeff: float,
    normalization: str,
    max_completion_length: int,
    accumulation: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """What GRPO's loss gains, ``coeff * world / accumulation`` (scaled for gradient
    accumulation as TRL scales its policy loss), and the unscaled ``world`` to log."""
    world_mask = tool_result_mask(inputs["completion_mask"], inputs["tool_mask"])
    world = world_model_loss(per_token_logps, world_mask, normalization, max_completion_length)
    return coeff * world / accumulation, world
