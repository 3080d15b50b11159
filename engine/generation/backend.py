"""Which sampler a run uses: ``generation.backend`` resolved."""

from __future__ import annotations

import importlib.util

from engine.fields import ConfigError


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def check_available(requested: str) -> None:
    """Refuse ``vllm`` where the package is missing, naming the field and the alternatives."""
    if requested == "vllm" and not vllm_installed():
        raise ConfigError(
            "generation.backend",
            "vllm needs the vllm package, which is not installed here; use auto, hf or compiled",
        )


def resolve_backend(requested: str) -> str:
    """``hf``, ``compiled`` or ``vllm`` for ``requested``.

    ``auto`` is ``compiled`` on every device. On CUDA its static cache and CUDA-graph decode pay
    off most. On a CPU the same code runs without graphs and still beats transformers'
    ``generate``: it prefills a group's prompt once and multiplies by merged projections. On
    this repository's 2-core machine it cut SmolLM2-135M-Instruct's sampling from 8.4 to 6.1 s
    a step and the default model's from 0.59 to 0.36 s (bench/RESULTS.md, fifteenth session).
    ``vllm`` is refused where the package is missing.
    """
    if requested == "auto":
        return "compiled"
    check_available(requested)
    if requested not in ("hf", "compiled", "vllm"):
        raise ConfigError(
            "generation.backend", f"must be one of auto, hf, compiled, vllm, got {requested!r}"
        )
    return requested
