"""Let a query row that the attention mask closes entirely attend to every key.

In a left-padded batch the padding positions before a short prompt are query rows whose causal
mask admits no key: every key at or before them is padding too. The cuDNN attention backend that
PyTorch's SDPA picks for bfloat16 on an H200 returns NaN query gradients for such rows, which
reach every layer below through the ``q_proj`` weights. A micro-batch saved from a SmolLM2 run at
a skipped update, replayed alone, did so with eager layers as well as compiled ones; the
memory-efficient and math backends, float32, and this repair gave finite gradients (3-5% of the
updates were skipped before it, none of 1,514 after: bench/RESULTS.md, fifteenth session).
The sampler's own attention repairs these rows too (engine/generation/decoder.py), and
transformers made this repair for PyTorch before 2.5 (``sdpa_mask``'s ``allow_torch_fix``:
``causal_mask |= torch.all(~causal_mask, dim=-1, keepdim=True)``); here it applies on every
version.

The repair changes nothing that is scored: no other query attends to a padding key, so a padding
row's output reaches neither the loss nor another position, and the gradient it receives is
zero.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from engine.trainers.compiled_layers import decoder_layers

# Set to 0 to leave the mask as the model builds it (to compare).
REPAIR_ENV = "STUDIO_REPAIR_EMPTY_ROWS"


def open_empty_rows(mask: Any) -> Any:
    """``mask`` (boolean, (batch, heads, queries, keys), True = may attend) with each row that
    admits no key opened to all; any other mask (flash attention's padding mask, additive
    floats, flex attention's block mask, none) as it is."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() != 4:
        return mask
    return mask | ~mask.any(dim=-1, keepdim=True)


def _repair_mask(module: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> Any:
    mask = kwargs.get("attention_mask")
    repaired = open_empty_rows(mask)
    return None if repaired is mask else (args, {**kwargs, "attention_mask": repaired})


def repair_empty_rows(model: Any) -> int:
    """Repair the mask each decoder layer of ``model`` receives, by a forward pre-hook (added
    before the layers are compiled, so that the compiled layers run it too); returns how many
    layers; 0 under ``STUDIO_REPAIR_EMPTY_ROWS=0``."""
    if os.environ.get(REPAIR_ENV, "1") == "0":
        return 0
    layers = decoder_layers(model)
    for layer in layers:
        layer.register_forward_pre_hook(_repair_mask, with_kwargs=True)
    return len(layers)
