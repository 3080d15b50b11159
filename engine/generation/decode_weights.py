"""The decode step's projection weights: q/k/v and gate/up each as one matrix, LoRA merged in.

At the batch of a training step (a few hundred rows) each projection of a decode step is a small
matrix product whose time is mostly fixed cost, so one product in place of three (q, k, v) and
one in place of two (gate, up) is worth a copy of their weights: vLLM's ``QKVParallelLinear`` and
``MergedColumnParallelLinear``, nano-vllm's ``qkv_proj``/``gate_up_proj``. LoRA adapters are
merged into the copies (``W + scaling * B @ A``, Hu et al. 2021, eq. 3, through peft's own
``get_delta_weight``), so a LoRA run decodes at the speed of a plain one.

The copies are refreshed from the live weights before every generation call (:meth:`refresh`),
so optimizer steps and adapter updates are seen. On a GPU the base weights go over in one
multi-tensor copy and each group of like adapters' ``B @ A`` comes from one batched product:
merged module by module, a LoRA model's refresh launched several kernels per adapted projection:
for SmolLM2's 210 (r16 on every projection) 26.25 ms on an H200 against 3.57 ms batched, 1,110
launches against 60 (``bench/decode_refresh.py``). On the CPU, where a launch costs nothing and
the batched passes over every weight miss the cache, module by module is faster: 160 against
220 ms for the same 210 on two cores.

Where a projection is something else (a quantised layer, a LoRA variant such as DoRA) or the
copies would take more than :data:`MAX_COPY_BYTES`, :func:`build_decode_weights` returns None
and the decoder calls the model's modules as they are.
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


def _cast_to_float32(tensor: torch.Tensor) -> bool:
    """peft's merge multiplies half-precision adapters on the CPU in float32 (slow bf16 matmuls)."""
    return tensor.device.type == "cpu" and tensor.dtype in (torch.float16, torch.bfloat16)


def _adapter_state(module: nn.Module) -> tuple:
    """What decides a projection's merge: changed (an adapter merged, disabled or switched,
    its scale set), the refresh plan is built again."""
    scaling = getattr(module, "scaling", {})
    return (
        getattr(module, "merged", False),
        getattr(module, "disable_adapters", False),
        tuple(getattr(module, "active_adapters", ())),
        tuple(sorted(scaling.items())) if isinstance(scaling, dict) else (),
    )


# The most bytes of float32 deltas one batched product makes; a larger group is split.
DELTA_CHUNK_BYTES = 2**26


class _RefreshPlan:
    """How the copies are rewritten from the live weights.

    Each slot is a module and the rows of a copy it fills. ``batched``: the base weights go over
    in one multi-tensor copy; each single plain adapter joins the group of adapters of its
    shapes, dtype and scale, whose deltas ``scaling * B @ A`` (peft's ``get_delta_weight``) come
    from one batched product per :data:`DELTA_CHUNK_BYTES` and are added in one multi-tensor
    add. Otherwise, and for anything else (several adapters on one module), each module's merged
    weight is copied in turn, as :func:`_effective` makes it.
    """

    def __init__(
        self, slots: list[tuple[nn.Module, torch.Tensor, torch.Tensor | None]], batched: bool
    ) -> None:
        self.state = [_adapter_state(module) for module, _, _ in slots]
        self.modules = [module for module, _, _ in slots]
        self.base_sources: list[torch.Tensor] = []
        self.base_copies: list[torch.Tensor] = []
        self.groups: dict[tuple, list[tuple[nn.Module, str, torch.Tensor]]] = {}
        self.one_by_one: list[tuple[nn.Module, torch.Tensor]] = []
        for module, weight, bias in slots:
            base, adapters = linear_parts(module)
            if bias is not None and base.bias is not None:  # else its rows stay the zeros
                self.base_sources.append(base.bias)
                self.base_copies.append(bias)
            if not batched or len(adapters) > 1 or getattr(module, "fan_in_fan_out", False):
                self.one_by_one.append((module, weight))
                continue
            self.base_sources.append(base.weight)
            self.base_copies.append(weight)
            for adapter in adapters:
                a, b = module.lora_A[adapter].weight, module.lora_B[adapter].weight
                key = (a.shape, b.shape, a.dtype, module.scaling[adapter], weight.dtype)
                self.groups.setdefault(key, []).append((module, adapter, weight))

    def stale(self) -> bool:
        return any(
            _adapter_state(module) != state
            for module, state in zip(self.modules, self.state, strict=True)
        )

    @torch.no_grad()
    def run(self) -> None:
        if self.base_copies:
            torch._foreach_copy_(self.base_copies, self.base_sources)
        for (_, _, dtype, scaling, weight_dtype), members in self.groups.items():
            per_chunk = max(1, DELTA_CHUNK_BYTES // (members[0][2].numel() * 4))
            for start in range(0, len(members), per_chunk):
                chunk = members[start : start + per_chunk]
                a = torch.stack([m.lora_A[name].weight for m, name, _ in chunk])
                b = torch.stack([m.lora_B[name].weight for m, name, _ in chunk])
                if _cast_to_float32(a):
                    a, b = a.float(), b.float()
                delta = torch.bmm(b, a).mul_(scaling).to(dtype).to(weight_dtype)
                torch._foreach_add_([copy for _, _, copy in chunk], list(delta.unbind(0)))
        for module, weight in self.one_by_one:
            weight.copy_(_effective(module)[0])


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

    def slots(self) -> list[tuple[nn.Module, torch.Tensor, torch.Tensor | None]]:
        """Each module with the rows of the copy (weight, bias) it fills; [] when in place."""
        if not self.copied:
            return []
        found, row = [], 0
        for module in self.modules:
            rows = linear_parts(module)[0].weight.shape[0]
            bias = None if self.bias is None else self.bias[row : row + rows]
            found.append((module, self.weight[row : row + rows], bias))
            row += rows
        return found


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

    def __init__(self, layers: list[LayerWeights], batched: bool | None = None) -> None:
        self.layers = layers
        slots = self._slots()
        # None: batched where launches cost (a GPU), module by module where they do not.
        self.batched = bool(slots) and slots[0][1].is_cuda if batched is None else batched
        self._plan = _RefreshPlan(slots, self.batched)

    def _slots(self) -> list[tuple[nn.Module, torch.Tensor, torch.Tensor | None]]:
        return [s for layer in self.layers for p in layer.projections() for s in p.slots()]

    def extra_bytes(self) -> int:
        return sum(p.extra_bytes() for layer in self.layers for p in layer.projections())

    def refresh(self) -> None:
        """Copy the model's current weights (and merged adapters) into the decode copies."""
        if self._plan.stale():
            self._plan = _RefreshPlan(self._slots(), self.batched)
        self._plan.run()


def _projections_of(layer: nn.Module) -> dict[str, nn.Module] | None:
    attn, mlp = layer.self_attn, layer.mlp
    names = {"q": (attn, "q_proj"), "k": (attn, "k_proj"), "v": (attn, "v_proj")}
    names |= {"o": (attn, "o_proj"), "gate": (mlp, "gate_proj"), "up": (mlp, "up_proj")}
    names |= {"down": (mlp, "down_proj")}
    modules = {key: getattr(owner, attr, None) for key, (owner, attr) in names.items()}
    if any(m is None or linear_parts(m) is None for m in modules.values()):
        return None
    return modules


def build_decode_weights(
    layers: nn.ModuleList, batched: bool | None = None
) -> DecodeWeights | None:
    """Decode weights for ``layers`` (Llama-style blocks), or None where a projection is not a
    plain or LoRA linear or the copies would exceed :data:`MAX_COPY_BYTES`. ``batched``: how
    they are refreshed (:class:`DecodeWeights`; None: batched on a GPU)."""
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
        ],
        batched,
    )
