"""Which sampler a run uses: ``generation.backend`` resolved for the device it runs on."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from engine.config.fields import ConfigError

if TYPE_CHECKING:
    import torch


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def check_available(requested: str) -> None:
    """Refuse ``vllm`` where the package is missing, naming the field and the alternatives."""
    if requested == "vllm" and not vllm_installed():
        raise ConfigError(
            "generation.backend",
            "vllm needs the vllm package, which is not installed here; use auto, hf or compiled",
        )


def resolve_backend(requested: str, device: torch.device | str) -> str:
    """``hf``, ``compiled`` or ``vllm`` for ``requested`` on ``device``.

    ``auto`` is ``compiled`` on CUDA (a static cache and CUDA-graph decode pay off there) and
    ``hf`` elsewhere; ``compiled`` on a CPU runs the same code without graphs. ``vllm`` is
    refused where the package is missing.
    """
    import torch

    device = torch.device(device)
    if requested == "auto":
        return "compiled" if device.type == "cuda" else "hf"
    check_available(requested)
    if requested not in ("hf", "compiled", "vllm"):
        raise ConfigError(
            "generation.backend", f"must be one of auto, hf, compiled, vllm, got {requested!r}"
        )
    return requested
