"""The decode step's projection weights: q/k/v and gate/up each as one matrix, LoRA merged in.

At the batch of a training step (a few hundred rows) each projection of a decode step is a small
matrix product whose time is mostly fixed cost, so one product in place of three (q, k, v) and
one in place of two (gate, up) is worth a copy of their weights: vLLM's ``QKVParallelLinear`` and
``MergedColumnParallelLinear``, nano-vllm's ``qkv_proj``/``gate_up_proj``. LoRA adapters are
merged into the copies (``W + scaling * B @ A``, Hu et al. 2021, eq. 3, through peft's own
``get_delta_weight``), so a LoRA run decodes at the speed of a plain one.

The copies are refreshed from the live weights before every generation call (:meth:`refresh`,
a device-to-device copy), so optimizer steps and adapter updates are seen. Where a projection is
something else (a quantised layer, a LoRA variant such as DoRA) or the copies would take more
than :data:`MAX_COPY_BYTES`, :func:`build_decode_weights` returns None and the decoder calls the
model's modules as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

# Above this the copies cost more memory than their speed is worth (large models' products are
# bound by reading their weights, not by launch cost); 1 GiB covers models up to ~1.5B.
MAX_COPY_BYTES = 2**30


def _lora_parts(module: nn.Module) -> tuple[nn.Linear, list[str]] | None:
    """(base linear, adapters to merge) for a plain peft LoRA linear, else None."""
    base = getattr(module, "base_layer", None)
    if not isinstance(base, nn.Linear) or not hasattr(module, "get_delta_weight"):
        return None
    if getattr(module, "merged", False) or getattr(module, "disable_adapters", False):
        return base, []
    adapters = [a for a in module.active_adapters if a in module.lora_A]
    variants = getattr(module, "lora_variant", {})
    lora_bias = getattr(module, "lora_bias", {})
    if any(variants.get(a) is not None or lora_bias.get(a) for a in adapters):
        return None
    return base, adapters


def linear_parts(module: nn.Module) -> tuple[nn.Linear, list[str]] | None:
    """The plain linear a projection applies and the LoRA adapters on top of it; None when the
    module is neither a ``nn.Linear`` nor a plain peft LoRA linear."""
    if type(module) is nn.Linear:
        return module, []
    return _lora_parts(module)


def _in_place(modules: list[nn.Module]) -> bool:
    """One plain ``nn.Linear``: the decode step multiplies by its own weight, no copy."""
    return len(modules) == 1 and type(modules[0]) is nn.Linear


@torch.no_grad()
def _effective(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    base, adapters = linear_parts(module)
    weight = base.weight
    for adapter in adapters:
        weight = weight + module.get_delta_weight(adapter).to(weight.dtype)
    return weight, base.bias


class _Projection:
    """One decode-time matrix: the concatenation of ``modules``' effective weights.

    A single plain ``nn.Linear`` is used in place (no copy); anything else is copied into a
    buffer that :meth:`refresh` rewrites.
    """

    @torch.no_grad()
    def __init__(self, modules: list[nn.Module]) -> None:
        self.modules = modules
        self.copied = not _in_place(modules)
        if not self.copied:
            self.weight, self.bias = modules[0].weight, modules[0].bias
            return
        parts = [_effective(m) for m in modules]
        self.weight = torch.cat([w for w, _ in parts])
        biases = [b for _, b in parts]
        self.bias = None
        if any(b is not None for b in biases):
            self.bias = torch.cat(
                [
                    b if b is not None else w.new_zeros(w.shape[0])
                    for (w, _), b in zip(parts, biases, strict=True)
                ]
            )

    def extra_bytes(self) -> int:
        if not self.copied:
            return 0
        bias = 0 if self.bias is None else self.bias.numel() * self.bias.element_size()
        return self.weight.numel() * self.weight.element_size() + bias

    @torch.no_grad()
    def refresh(self) -> None:
        if not self.copied:
            return
        row = 0
        for module in self.modules:
            weight, bias = _effective(module)
            rows = weight.shape[0]
            self.weight[row : row + rows].copy_(weight)
            if self.bias is not None:
                self.bias[row : row + rows].copy_(bias if bias is not None else 0.0)
            row += rows


@dataclass
class LayerWeights:
    qkv: _Projection
    o: _Projection
    gate_up: _Projection
    down: _Projection

    def projections(self) -> tuple[_Projection, ...]:
        return self.qkv, self.o, self.gate_up, self.down


class DecodeWeights:
    """Every decoder layer's :class:`LayerWeights`."""

    def __init__(self, layers: list[LayerWeights]) -> None:
        self.layers = layers

    def extra_bytes(self) -> int:
        return sum(p.extra_bytes() for layer in self.layers for p in layer.projections())

    def refresh(self) -> None:
        """Copy the model's current weights (and merged adapters) into the decode copies."""
        for layer in self.layers:
            for projection in layer.projections():
                projection.refresh()


def _projections_of(layer: nn.Module) -> dict[str, nn.Module] | None:
    attn, mlp = layer.self_attn, layer.mlp
    names = {"q": (attn, "q_proj"), "k": (attn, "k_proj"), "v": (attn, "v_proj")}
    names |= {"o": (attn, "o_proj"), "gate": (mlp, "gate_proj"), "up": (mlp, "up_proj")}
    names |= {"down": (mlp, "down_proj")}
    modules = {key: getattr(owner, attr, None) for key, (owner, attr) in names.items()}
    if any(m is None or linear_parts(m) is None for m in modules.values()):
        return None
    return modules


def build_decode_weights(layers: nn.ModuleList) -> DecodeWeights | None:
    """Decode weights for ``layers`` (Llama-style blocks), or None where a projection is not a
    plain or LoRA linear or the copies would exceed :data:`MAX_COPY_BYTES`."""
    found = [_projections_of(layer) for layer in layers]
    if any(f is None for f in found):
        return None
    # Sizes first: the copies are only allocated when they fit the limit.
    copied = 0
    for f in found:
        for group in (("q", "k", "v"), ("gate", "up"), ("o",), ("down",)):
            modules = [f[name] for name in group]
            if not _in_place(modules):
                copied += sum(linear_parts(m)[0].weight.nbytes for m in modules)
    if copied > MAX_COPY_BYTES:
        return None
    return DecodeWeights(
        [
            LayerWeights(
                qkv=_Projection([f["q"], f["k"], f["v"]]),
                o=_Projection([f["o"]]),
                gate_up=_Projection([f["gate"], f["up"]]),
                down=_Projection([f["down"]]),
            )
            for f in found
        ]
    )
