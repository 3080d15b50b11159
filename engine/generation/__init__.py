"""Fast sampling for training: a static KV cache, a CUDA-graph decode step and a device sampler.

The seams follow nano-vllm and gpt-fast: :mod:`.cache` (the static cache), :mod:`.decoder` (the
model's forward over it), :mod:`.runner` (prefill, the decode loop, the kept cache and graph),
:mod:`.token_step` (one token step and its captured graph), :mod:`.sampler`, and :mod:`.backend`
(which sampler a run uses); :mod:`.settings` declares the sampling knobs every sampler takes.
:func:`make_runner` is the one entry point.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from engine.generation.backend import resolve_backend

if TYPE_CHECKING:
    from engine.generation.runner import GenerationRunner

logger = logging.getLogger(__name__)


def make_runner(model: Any, backend: str, max_len: int) -> GenerationRunner | None:
    """The static-cache runner for ``model`` when ``backend`` resolves to ``compiled``.

    None means transformers' ``generate`` (or TRL's vLLM) samples instead: for ``hf`` and
    ``vllm``, and, with a warning, for a model this runner does not support.
    """
    # torch loads here, not with the package: a config names a backend without sampling.
    from engine.generation.decoder import unsupported_reason
    from engine.generation.runner import GenerationRunner

    if resolve_backend(backend) != "compiled":
        return None
    reason = unsupported_reason(model, max_len)
    if reason is not None:
        logger.warning(
            "generation.backend %s: using transformers' generate for %s", backend, reason
        )
        return None
    return GenerationRunner(model)


__all__ = ["make_runner", "resolve_backend"]
