"""Timing one piece of model work on the CPU or a GPU, and profiling one more call of it."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def median_and_profile(
    fn: Callable[[], object], device: torch.device, repeats: int
) -> tuple[float, torch.autograd.profiler_util.EventList]:
    """Median seconds of ``fn()`` over ``repeats`` calls after one untimed call (which
    allocates), the device synchronised around each, and torch.profiler's averages over one
    more call (what it launched)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    fn()
    seconds = []
    for _ in range(repeats):
        sync()
        started = time.perf_counter()
        fn()
        sync()
        seconds.append(time.perf_counter() - started)
    with torch.profiler.profile() as profile:
        fn()
        sync()
    return statistics.median(seconds), profile.key_averages()
