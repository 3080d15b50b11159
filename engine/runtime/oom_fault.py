"""The out-of-memory fault hook the training loops call (``STUDIO_INJECT_OOM=1``): the tests
reach the worker's one retry at half the micro-batch (:mod:`engine.run.oom_retry`) with it."""

from __future__ import annotations

import os

FAULT_ENV = "STUDIO_INJECT_OOM"
_injected = False


def inject_fault() -> None:
    """Raise ``torch.OutOfMemoryError`` the first time it is called in a process where
    ``STUDIO_INJECT_OOM=1`` (a test's fault-injection hook; the training loops call it)."""
    global _injected
    if os.environ.get(FAULT_ENV) != "1" or _injected:
        return
    import torch

    _injected = True
    raise torch.OutOfMemoryError(f"CUDA out of memory (injected by {FAULT_ENV}=1)")
