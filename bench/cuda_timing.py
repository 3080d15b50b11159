"""Timing GPU work with CUDA events, launched or replayed from a CUDA graph."""

from __future__ import annotations

from collections.abc import Callable

import torch


def cuda_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeat`` runs, timed with CUDA events."""
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def graph_ms(fn: Callable[[], object], repeat: int, calls: int = 1) -> float:
    """Median milliseconds per call of ``fn``, ``calls`` of them captured in one CUDA graph and
    replayed (no launch cost; several calls a graph spread the replay's own start over them)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up: lazy kernel and workspace set-up
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return cuda_ms(graph.replay, repeat) / calls


def replay_us(fn: Callable[[], object]) -> float:
    """Microseconds per call of a short ``fn``, ten calls a graph, median of 20 replays."""
    return graph_ms(fn, 20, calls=10) * 1000
