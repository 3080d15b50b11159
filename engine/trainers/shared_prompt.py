"""The update runs each prompt of a GRPO group once, not once per completion.

TRL's loss forward (``_get_per_token_logps_and_entropies``) runs every completion with its
prompt, so a group of G completions computes the same prompt G times. On a CPU the update is
bound by that arithmetic: with the built-in task's 136-token prompt and 64-token completions,
two thirds of the tokens are prompt. Here each distinct prompt runs once with its key/value
cache kept, the cache is indexed out to every completion of that prompt (so each completion's
gradient flows back into the one prompt pass), and the completions run on it. Causal attention
makes this exact: no prompt position attends to a completion, so a prompt's keys and values are
the same whichever completion follows. It is the prefix sharing of LLM serving (vLLM's prefix
caching; RadixAttention, Zheng et al. 2024, "SGLang"), applied to the update.

The last prompt token runs with the completions, since TRL's fused LM head scores each label
from the position before it. Position ids stay the model's defaults (0, 1, ... over the padded
row), as in TRL's own forward. Used where the update is plain: on the CPU, one process, no
activation checkpointing (which drops the cache), text only.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

# Set to 0 to run every completion with its prompt, as TRL does (to compare).
SHARE_ENV = "STUDIO_SHARE_PROMPTS"


# The loss forward's keyword arguments that are not images or other inputs besides text.
TEXT_ONLY_KWARGS = ("compute_entropy", "compute_aux_loss")


def shares_prompts(
    model: Any, input_ids: torch.Tensor, batch_size: int | None, forward_kwargs: dict[str, Any]
) -> bool:
    """Whether the update may run each distinct prompt once: text only (TRL's other keyword
    arguments all None, no MoE loss), on the CPU, in one process, without activation
    checkpointing and without TRL chunking the rows."""
    if forward_kwargs.get("compute_aux_loss") or any(
        value is not None for name, value in forward_kwargs.items() if name not in TEXT_ONLY_KWARGS
    ):
        return False
    if os.environ.get(SHARE_ENV, "1") == "0" or input_ids.device.type != "cpu":
        return False
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return False  # DDP counts one forward per backward
    if getattr(model, "is_activation_checkpointing", False):
        return False
    return batch_size is None or batch_size >= input_ids.size(0)


def logps_with_shared_prompts(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    compute_entropy: bool,
    autocast: AbstractContextManager | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, None] | None:
    """TRL's ``(log-probs, entropies, aux loss)`` of the last ``logits_to_keep`` tokens of each
    row, the prompt part run once per distinct prompt; None when no two rows share one."""
    width = input_ids.size(1) - logits_to_keep - 1  # prompt tokens held in the cache
    if width < 1:
        return None
    key = torch.cat([input_ids[:, :width], attention_mask[:, :width]], dim=1)
    distinct, row_prompt = torch.unique(key, dim=0, return_inverse=True)
    if len(distinct) == len(key):
        return None
    with autocast or nullcontext():
        prefix = model(
            input_ids=distinct[:, :width],
            attention_mask=distinct[:, width:],
            use_cache=True,
            logits_to_keep=1,
        )
        cache = getattr(prefix, "cache", None)
        if cache is None:  # a model without a key/value cache: TRL's forward
            return None
        cache.batch_select_indices(row_prompt)
        tail = input_ids[:, width:]
        labels = tail.masked_fill(attention_mask[:, width:] == 0, -100)
        labels[:, 0] = -100  # the last prompt token: it is not scored
        out = model(
            input_ids=tail,
            attention_mask=attention_mask,
            cache=cache,
            labels=labels,
            fused_lm_head=True,
        )
    entropy = out.entropy[:, -logits_to_keep:] if compute_entropy else None
    return out.log_probs[:, -logits_to_keep:], entropy, None
