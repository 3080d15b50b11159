"""The numbers of a model that its memory estimate reads (layers, widths, vocabulary,
parameters), from its config or from the loaded model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.models.loading import meta_model, resolve_spec
from engine.models.specs import ModelSpec

_LAYER_PARAM = re.compile(r"(^|\.)layers\.\d+\.")


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs of a model, read from its config.

    Attributes:
        parameters: all parameters.
        linear_parameters: weights of the linear layers but the output head (what 4-bit
            quantises and ``all-linear`` LoRA adapts).
        lora_parameters: trainable adapter parameters under the spec's LoRA (0 without LoRA).
        lora_modules: linear layers the spec's LoRA adapts (0 without LoRA).
        lora_input_features: their input features summed (what a copy of their inputs holds
            per token).
        layers, hidden, intermediate, kv_heads, head_dim, vocab: the transformer's sizes.
        layer_parameters: parameters of one decoder layer (an FSDP unit).
        fused_head: the logits are the LM head's plain product, so PPO can use the fused head.
    """

    parameters: int
    linear_parameters: int
    lora_parameters: int
    layers: int
    hidden: int
    intermediate: int
    kv_heads: int
    head_dim: int
    vocab: int
    layer_parameters: int = 0
    fused_head: bool = True
    lora_modules: int = 0
    lora_input_features: int = 0

    @property
    def root_parameters(self) -> int:
        """Parameters outside the decoder layers (embeddings, final norm, LM head)."""
        return self.parameters - self.layers * self.layer_parameters


def model_shape(spec: ModelSpec) -> ModelShape | None:
    """The shape of ``spec``'s model, or None when its config cannot be read from here."""
    resolved = resolve_spec(spec)
    try:
        model = meta_model(resolved.name_or_path.strip(), resolved.gguf_file)
    except (OSError, ValueError, ImportError):
        return None
    return shape_of(model, spec)


def shape_of(model: Any, spec: ModelSpec) -> ModelShape:
    """The :class:`ModelShape` of a built (meta or real) model under ``spec``'s LoRA."""
    import torch

    from engine.models.lm_head import plain_head

    cfg = model.config.get_text_config()
    head = model.get_output_embeddings()
    linears = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and m is not head
    ]
    lora = modules = features = 0
    if spec.lora is not None:
        targets = spec.lora.target_modules
        for name, m in linears:
            leaf = name.rsplit(".", 1)[-1]
            if targets == "all-linear" or leaf in targets:
                lora += spec.lora.r * (m.in_features + m.out_features)
                modules += 1
                features += m.in_features
    heads = cfg.num_attention_heads
    in_layers = sum(p.numel() for n, p in model.named_parameters() if _LAYER_PARAM.search(n))
    return ModelShape(
        parameters=sum(p.numel() for p in model.parameters()),
        linear_parameters=sum(m.weight.numel() for _, m in linears),
        lora_parameters=lora,
        layers=cfg.num_hidden_layers,
        hidden=cfg.hidden_size,
        intermediate=getattr(cfg, "intermediate_size", None) or 4 * cfg.hidden_size,
        kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
        vocab=cfg.vocab_size,
        layer_parameters=in_layers // max(cfg.num_hidden_layers, 1),
        fused_head=plain_head(model) is not None,
        lora_modules=modules,
        lora_input_features=features,
    )
