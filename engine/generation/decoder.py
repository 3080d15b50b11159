"""The forward pass of a Llama-style decoder over a :class:`StaticKVCache`, reusing its modules.

Qwen2/Qwen3, Llama and Mistral checkpoints in transformers share one layout (pre-norm blocks of
grouped-query attention with rotary positions and a gated MLP). This module calls the model's own
projections, norms, MLPs and rotary embedding (so LoRA layers injected by peft run as they
are) and does only the attention itself against the static cache, as gpt-fast does. Other
architectures are not supported here; callers fall back to transformers' ``generate``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from engine.generation import attention_kernel
from engine.generation.cache import StaticKVCache
from engine.generation.decode_weights import DecodeWeights, LayerWeights

SUPPORTED_MODEL_TYPES = ("llama", "qwen2", "qwen3", "mistral")
# How :func:`decode_attention` computes: "kernel" (Triton on CUDA, else "products"), "products"
# (two batched products) or "sdpa" (torch's attention; for comparison in benchmarks).
DECODE_ATTENTION = "kernel"

# One decoder block of the decode step (StaticDecoder.decode_layer's signature).
LayerStep = Callable[..., torch.Tensor]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2021, RoFormer eq. 34), in transformers' half-split
    layout: x (N, H, S, D), cos/sin (N, S, D)."""
    return x * cos.unsqueeze(1) + _rotate_half(x) * sin.unsqueeze(1)


def base_model_of(model: Any) -> Any:
    """The transformers model under a peft wrapper (its LoRA layers stay injected)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def unsupported_reason(model: Any, max_len: int) -> str | None:
    """Why this model cannot use the static-cache decoder, or None when it can."""
    base = base_model_of(model)
    config = getattr(base, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        return f"model type {model_type!r} (supported: {', '.join(SUPPORTED_MODEL_TYPES)})"
    body = getattr(base, "model", None)
    if body is None or not hasattr(body, "layers") or not hasattr(base, "lm_head"):
        return "the model has no decoder layers or LM head where transformers puts them"
    window = getattr(config, "sliding_window", None)
    if window and getattr(config, "use_sliding_window", True) and window < max_len:
        return f"a sliding window of {window} tokens, shorter than {max_len}"
    if getattr(base, "is_loaded_in_4bit", False) or getattr(base, "is_loaded_in_8bit", False):
        return "bitsandbytes-quantised weights"
    if any(p.device.type == "meta" for p in base.parameters()):
        return "weights offloaded to the meta device"
    return None


@dataclass
class DecoderShape:
    num_layers: int
    q_heads: int
    kv_heads: int
    head_dim: int


class StaticDecoder:
    """Prefill and single-token decode of a Llama-style model against a static cache."""

    def __init__(self, model: Any) -> None:
        base = base_model_of(model)
        self.body: nn.Module = base.model
        self.lm_head: nn.Module = base.lm_head
        config = base.config
        attn = self.body.layers[0].self_attn
        q_heads = config.num_attention_heads
        head_dim = getattr(attn, "head_dim", None) or config.hidden_size // q_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or q_heads
        self.shape = DecoderShape(len(self.body.layers), q_heads, kv_heads, head_dim)
        self.scaling = getattr(attn, "scaling", head_dim**-0.5)
        # Merged projections for the decode step; set by the runner (see decode_weights).
        self.weights: DecodeWeights | None = None
        on_cuda = next(base.parameters()).is_cuda
        self.attention_op = (
            attention_kernel.custom_op() if on_cuda and attention_kernel.available() else None
        )

    def _qkv(
        self,
        layer: nn.Module,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        merged: LayerWeights | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries (N, Hq, S, D), keys and values (N, Hkv, S, D) of normed hidden states x,
        through the layer's projections or its ``merged`` q/k/v matrix."""
        attn, (n, s, _), shape = layer.self_attn, x.shape, self.shape
        if merged is None:
            q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
        else:
            widths = (shape.q_heads * shape.head_dim, *(2 * [shape.kv_heads * shape.head_dim]))
            qkv = F.linear(x, merged.qkv.weight, merged.qkv.bias)
            q, k, v = qkv.split(widths, dim=-1)
        q, k, v = (t.view(n, s, -1, shape.head_dim) for t in (q, k, v))
        if hasattr(attn, "q_norm"):  # Qwen3 normalises each head's queries and keys
            q, k = attn.q_norm(q), attn.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v

    def _block_rest(
        self,
        layer: nn.Module,
        h: torch.Tensor,
        attn_out: torch.Tensor,
        merged: LayerWeights | None = None,
    ) -> torch.Tensor:
        """The block after attention: output projection, residual, MLP, residual; through the
        layer's modules or its ``merged`` matrices (o, gate/up, down)."""
        if merged is None:
            h = h + layer.self_attn.o_proj(attn_out)
            return h + layer.mlp(layer.post_attention_layernorm(h))
        h = h + F.linear(attn_out, merged.o.weight, merged.o.bias)
        x = layer.post_attention_layernorm(h)
        gate, up = F.linear(x, merged.gate_up.weight, merged.gate_up.bias).chunk(2, dim=-1)
        return h + F.linear(layer.mlp.act_fn(gate) * up, merged.down.weight, merged.down.bias)

    def prefill(
        self,
        cache: StaticKVCache,
        input_ids: torch.Tensor,
        valid: torch.Tensor,
        rows: torch.Tensor,
        sources: torch.Tensor,
    ) -> torch.Tensor:
        """Run U left-padded prompts (U, P) once; write their keys/values into cache ``rows``.

        ``valid`` (U, P) is 1 on prompt tokens. Returns the logits after each prompt, (U, V).
        Uses :attr:`weights` (merged projections) when set, as :meth:`decode` does.
        """
        u, p = input_ids.shape
        positions = (valid.long().cumsum(-1) - 1).clamp(min=0)  # (U, P), skipping left padding
        causal = torch.ones(p, p, dtype=torch.bool, device=input_ids.device).tril()
        # Padding queries attend to themselves only, so no row of the mask is empty (NaN).
        eye = torch.eye(p, dtype=torch.bool, device=input_ids.device)
        mask = ((causal & valid.bool()[:, None, :]) | eye)[:, None]  # (U, 1, P, P)
        h = self.body.embed_tokens(input_ids)  # (U, P, d)
        cos, sin = self.body.rotary_emb(h, positions)
        group = self.shape.q_heads // self.shape.kv_heads
        for i, layer in enumerate(self.body.layers):
            merged = None if self.weights is None else self.weights.layers[i]
            q, k, v = self._qkv(layer, layer.input_layernorm(h), cos, sin, merged)
            cache.write_prefix(i, k, v, rows, sources)
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scaling)
            h = self._block_rest(layer, h, out.transpose(1, 2).reshape(u, p, -1), merged)
        return self.lm_head(self.body.norm(h[:, -1:]))[:, 0]

    def decode(
        self,
        cache: StaticKVCache,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        slot: torch.Tensor,
        valid: torch.Tensor,
        layer_step: LayerStep | None = None,
    ) -> torch.Tensor:
        """One token for each of N rows: tokens and positions (N,), slot (1,), valid (N, L).

        Marks ``slot`` valid, appends each row's key/value there and returns the next logits
        (N, V). No host synchronisation and fixed shapes, so it can be captured as a graph.
        Uses :attr:`weights` (merged projections) when set, else the layers' own modules.
        ``layer_step`` runs each block in place of :meth:`decode_layer` (its compiled form).
        """
        step = layer_step or self.decode_layer
        valid.index_fill_(1, slot, True)
        h = self.body.embed_tokens(tokens[:, None])  # (N, 1, d)
        cos, sin = self.body.rotary_emb(h, positions[:, None])
        for i, layer in enumerate(self.body.layers):
            merged = None if self.weights is None else self.weights.layers[i]
            h = step(layer, merged, h, cos, sin, cache.keys[i], cache.values[i], slot, valid)
        return self.lm_head(self.body.norm(h))[:, 0]

    def decode_layer(
        self,
        layer: nn.Module,
        merged: LayerWeights | None,
        h: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        slot: torch.Tensor,
        valid: torch.Tensor,
    ) -> torch.Tensor:
        """One block of :meth:`decode` over its layer's cache buffers ``keys``/``values``
        (N, Hkv, L, D): the new key/value written at ``slot``, the next hidden states returned.

        Every block of a model runs this one function with tensors of one shape, so
        ``torch.compile`` builds it once for all of them (its layers' weights are inputs)."""
        n, s = h.shape[0], self.shape
        q, k, v = self._qkv(layer, layer.input_layernorm(h), cos, sin, merged)
        # Indexed assignment, as gpt-fast writes its cache: inductor lowers it to a store of the
        # new entries, where index_copy_ fused with the rotary could rewrite the whole buffer.
        keys[:, :, slot] = k
        values[:, :, slot] = v
        # Grouped-query attention without copying the cache: the query heads that share a
        # key/value head become that head's query rows, (N, Hkv, G, D).
        q = q.reshape(n, s.kv_heads, s.q_heads // s.kv_heads, s.head_dim)
        out = decode_attention(q, keys, values, valid, slot, self.scaling, self.attention_op)
        return self._block_rest(layer, h, out.reshape(n, 1, s.q_heads * s.head_dim), merged)


def decode_attention(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid: torch.Tensor,
    slot: torch.Tensor,
    scale: float,
    kernel: Any = None,
) -> torch.Tensor:
    """Softmax attention of a few query rows per key/value head over the cache.

    q (N, Hkv, G, D); keys/values (N, Hkv, L, D); valid (N, L) True where a position holds a
    token, none past ``slot`` (1,). With ``kernel`` (:func:`attention_kernel.custom_op`, on
    CUDA), one Triton kernel that reads only the positions up to the slot. Otherwise two batched
    products around a float32 softmax (Vaswani et al. 2017, eq. 1): with G = 7 rows and a few
    hundred keys, kernels built for long queries waste their tiles (on an H100 at 256 rows x 320
    positions, cuDNN's flash kernel took 33 us a layer, these products and the softmax inductor
    fuses between them 27 us; bench/decode_step.py).
    """
    if kernel is not None and DECODE_ATTENTION == "kernel" and attention_kernel.supports(q, keys):
        return kernel(q, keys, values, valid, slot, scale)
    mask = valid[:, None, None, :]
    if DECODE_ATTENTION == "sdpa":
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale)
    scores = torch.matmul(q, keys.transpose(-1, -2)).float() * scale  # (N, Hkv, G, L)
    probs = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    return torch.matmul(probs.to(values.dtype), values)
