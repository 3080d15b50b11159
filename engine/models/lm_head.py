"""Whether a model's logits are the plain product of its LM head, which the fused
log-probabilities (:mod:`engine.trainers.ppo.fused_head`) and the memory estimate rely on."""

from __future__ import annotations

from typing import Any

from torch import nn

# Config fields of models whose logits are scaled or soft-capped after the head's product.
_LOGIT_TRANSFORMS = (
    "final_logit_softcapping",
    "logit_scale",
    "output_multiplier",
    "lm_head_multiplier",
    "logits_scaling",
)


def plain_head(model: Any) -> nn.Linear | None:
    """The model's LM head when its logits are the plain product, else None."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config.get_text_config()
    if any(getattr(config, name, None) is not None for name in _LOGIT_TRANSFORMS):
        return None
    head = base.get_output_embeddings()
    return head if isinstance(head, nn.Linear) else None
