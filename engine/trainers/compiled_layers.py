"""Compile the decoder layers' training forward and backward with ``torch.compile``.

On a GPU the update of a small model is bound by element-wise work, not by its matrix products:
in ``bench/step_phases.py``'s torch.profiler table of a GRPO step (Qwen2.5-0.5B's shape, 64
sequences a micro-batch, one H100) the RMSNorm, rotary and gated-MLP kernels (``aten::mul``,
``pow``, ``copy_`` and their backward) took about as long as every matrix product of the update.
Inductor fuses them per layer, as gpt-fast and nano-vllm do for decoding: there the update's
forwards and backward fell from 0.87 s to 0.58 s a step and the peak from 30.8 to 24.0 GiB
(bench/RESULTS.md). Each layer of one
model shares one compiled graph (dynamo treats the layers' parameters as inputs), built with
dynamic shapes since batch and sequence lengths change from step to step.

Only the layers are compiled: the model's own forward stays eager, so TRL's fused LM head,
PEFT's wrappers and our static-cache sampler (which calls the layers' submodules, not the
layers) work as before. Layers that inductor cannot compile run eagerly (dynamo's
``suppress_errors``), so a missing compiler toolchain slows a run instead of failing it.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch

from engine.generation.decoder import base_model_of

logger = logging.getLogger(__name__)


def decoder_layers(model: Any) -> list[torch.nn.Module]:
    """The decoder blocks of a transformers causal LM (under PEFT too); [] if none are found."""
    body = getattr(base_model_of(model), "model", None)
    layers = getattr(body, "layers", None)
    return list(layers) if isinstance(layers, torch.nn.ModuleList) else []


def compile_decoder_layers(model: Any, backend: str = "inductor") -> int:
    """Compile each decoder layer in place; returns how many were compiled."""
    layers = decoder_layers(model)
    if not layers:
        logger.info("No decoder layers found to compile; training eagerly")
        return 0
    torch._dynamo.config.suppress_errors = True  # a layer it cannot compile runs eagerly
    for layer in layers:
        layer.compile(backend=backend, dynamic=True)
    logger.info("Compiled %d decoder layers for training (%s)", len(layers), backend)
    return len(layers)


# Prompt and completion widths of a run with compiled layers are padded to a multiple of this.
# Inductor specialises the layers on the first step's sequence length being a multiple of 8
# (guard `(size[1] % 8) == 0`): the first step whose length was not compiled them again (37 s
# of SmolLM2's step 19 on an H100). Triton then specialises each kernel on its size arguments
# being multiples of 16: at multiples of 8 the first length of the other kind built every kernel
# again (+0.9 s once on a cold cache: SmolLM2's step 16 on an H200, 3.5x the median).
COMPILED_LENGTH_MULTIPLE = 16

# Set to 0 to train eagerly (to compare, or to rule the compiler out).
COMPILE_ENV = "STUDIO_COMPILE_LAYERS"


def compiles_on(device: torch.device, sharded: bool) -> bool:
    """Compile on CUDA for an unsharded model (FSDP wraps the layers after we would compile),
    unless ``STUDIO_COMPILE_LAYERS=0``."""
    return device.type == "cuda" and not sharded and os.environ.get(COMPILE_ENV, "1") != "0"


def avoid_cudnn_attention() -> None:
    """Leave cuDNN's kernels out of those torch's attention (SDPA) picks from, in this process.

    On Hopper SDPA prefers cuDNN's attention for a masked batch, and cuDNN builds its kernel for
    each new class of sequence length at run time, through the CUDA driver's JIT compiler. A
    training step whose width (its longest prompt plus its longest completion, padded) is of a
    new class waited for that: on one H200 with the driver's JIT cache empty, SmolLM2's layers
    (256 rows, LoRA r16, compiled) took 1.41 s forward and backward at their first width of 192
    and 0.39 s at later ones (torch.profiler: 0.74 s in ``_cudnn_attention_backward``'s host
    code), and a real run's step 19 took 3x the median (bench/RESULTS.md, issue 22). The flash
    and memory-efficient kernels SDPA picks instead are compiled ahead of time: 0.41 s at the
    first visit of 192 and 0.40 s later, and 1.5-5% slower than cuDNN's at a width already
    visited (``bench/first_widths.py --cudnn-attention`` compares)."""
    torch.backends.cuda.enable_cudnn_sdp(False)
