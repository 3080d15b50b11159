"""A bfloat16 copy of a float32 policy for the CPU sampler, where the CPU multiplies bf16 natively.

On a CPU with AMX or AVX512-BF16, oneDNN multiplies bfloat16 matrices at about twice the
float32 rate: SmolLM2-135M sampled 16 rows x 64 tokens in 3.1 s from a bf16 copy against 4.9 s
in float32 (a 2-core Xeon with AMX). On other CPUs bf16 products are emulated and slower, so
the copy is made only where :func:`cpu_multiplies_bf16` says so.

The copy is the same transformers class built from the policy's config, its weights written
from the policy's before every generation call (:meth:`BF16Replica.refresh`) with LoRA adapters
merged in (``W + scaling * B @ A``, Hu et al. 2021, eq. 3, through peft's ``get_delta_weight``).
Training stays in float32: only the sampling reads the rounded weights. The sampled tokens are
then a bf16 policy's, a small off-policy gap that the run reports as ``gen/logprob_gap`` (the
sampler's log-probabilities against the loss's), as TRL's vLLM path has against its trainer.
Uncorrected, that gap cost most of what SmolLM2 learned in ten CPU minutes (bench/RESULTS.md),
so only a trainer that weights each completion by its importance ratio asks for the copy
(:mod:`engine.trainers.off_policy`).

``STUDIO_CPU_BF16_SAMPLING=0`` samples from the float32 policy itself.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch
from torch import nn

from engine.generation.decode_weights import effective_weight, linear_parts

logger = logging.getLogger(__name__)

ENV = "STUDIO_CPU_BF16_SAMPLING"
# A copy above this would cost more memory than a CPU run can spare (~2.7B parameters).
MAX_REPLICA_BYTES = 5 * 2**30


def cpu_multiplies_bf16() -> bool:
    """Whether this CPU has bf16 matrix instructions (AMX tiles or AVX512-BF16)."""
    checks = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def wants_replica(model: nn.Module) -> bool:
    """A float32 model on a CPU that multiplies bf16 natively, unless switched off."""
    first = next(model.parameters())
    return (
        first.device.type == "cpu"
        and first.dtype == torch.float32
        and os.environ.get(ENV, "1") != "0"
        and cpu_multiplies_bf16()
    )


class BF16Replica:
    """The bf16 copy of ``base`` (a transformers causal LM, possibly under peft's LoRA layers)."""

    def __init__(self, base: nn.Module, model: nn.Module) -> None:
        self.base = base
        self.model = model
        # Each tensor of the copy and its source in ``base``: a linear module (its weight is
        # written with the adapters merged) or a tensor (written as it is).
        self._sources: list[tuple[torch.Tensor, nn.Module | torch.Tensor]] = []

    @classmethod
    def build(cls, base: nn.Module) -> BF16Replica | None:
        """The copy, or None (logged) where it would be too large or a tensor has no source."""
        size = sum(p.numel() for p in base.parameters()) * 2
        if size > MAX_REPLICA_BYTES:
            logger.info("Sampling in float32: a bf16 copy would take %.1f GiB", size / 2**30)
            return None
        with torch.device("meta"):
            model = type(base)(base.config)
        model = model.to_empty(device="cpu").to(torch.bfloat16).eval().requires_grad_(False)
        model.tie_weights()  # to_empty gave the tied embedding and head a tensor each
        replica = cls(base, model)
        missing = replica._match()
        if missing:
            logger.info("Sampling in float32: no source for %s in the policy", missing)
            return None
        replica.refresh()
        return replica

    def _match(self) -> str | None:
        """Pair each tensor of the copy with its source in ``base``; the first unmatched name.

        Buffers (rotary frequencies) keep their source's dtype; so do tensors a module holds
        outside its parameters and buffers, which ``to_empty`` left on the meta device."""
        live = dict(self.base.named_modules())
        for module_name, module in self.model.named_modules():
            source = live.get(module_name)
            if source is None:
                if [*module.parameters(recurse=False), *module.buffers(recurse=False)]:
                    return module_name
                continue
            linear = isinstance(module, nn.Linear)
            if linear and linear_parts(source) is None:
                return module_name
            owner = linear_parts(source)[0] if linear else source
            for name, tensor in module.named_parameters(recurse=False):
                if linear and name == "weight":
                    self._sources.append((tensor, source))
                    continue
                found = getattr(owner, name, None)
                if not isinstance(found, torch.Tensor) or found.shape != tensor.shape:
                    return f"{module_name}.{name}"
                self._sources.append((tensor, found))
            held = {n: t for n, t in vars(module).items() if isinstance(t, torch.Tensor)}
            for name, tensor in [*module.named_buffers(recurse=False), *held.items()]:
                if name in held and not tensor.is_meta:
                    continue
                found = getattr(owner, name, None)
                if not isinstance(found, torch.Tensor) or found.shape != tensor.shape:
                    return f"{module_name}.{name}"
                own = torch.empty_like(found, device="cpu")
                if name in module._buffers:
                    module._buffers[name] = own
                else:
                    setattr(module, name, own)
                self._sources.append((own, found))
        return None

    @torch.no_grad()
    def refresh(self) -> None:
        """Write the policy's current weights, adapters merged, into the copy."""
        for tensor, source in self._sources:
            if isinstance(source, nn.Module):
                source = effective_weight(source)[0]
            tensor.copy_(source)


def bf16_replica(base: Any) -> BF16Replica | None:
    """A bf16 copy of ``base`` to sample from, where this CPU multiplies bf16 natively."""
    if not wants_replica(base):
        return None
    replica = BF16Replica.build(base)
    if replica is not None:
        logger.info("Sampling from a bfloat16 copy of the policy (this CPU multiplies bf16)")
    return replica
