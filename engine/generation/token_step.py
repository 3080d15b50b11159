"""One token step of the generation loop: sample, record, advance; captured as a CUDA graph.

:class:`DecodeGraph` holds the static inputs of a step for one cache shape and
:class:`SamplingSpec`, and on CUDA its captured graph (decode, sample on the device, record,
advance: one replay per token); :func:`decode_live_rows` is the eager loop without a graph,
which drops rows as they finish. :mod:`engine.generation.runner` drives both.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from engine.generation.cache import StaticKVCache
from engine.generation.decoder import LayerStep, StaticDecoder
from engine.generation.sampler import sample_tokens
from engine.generation.settings import SamplingSettings

logger = logging.getLogger(__name__)

# How many decode steps pass between checks that every row has finished (each check syncs).
FINISH_CHECK_EVERY = 8

# What torch.compile builds of the decode step: "layer" (one decoder block, compiled once and
# run for every block: regional compilation, PyTorch's recipe for cold-start compile time) or
# "step" (the whole decode, its blocks unrolled into one graph). A cold 8.5B LoRA run spent
# 50 s of its 85 s first step compiling the unrolled decode of 32 blocks (bench/RESULTS.md).
COMPILE_SCOPE_ENV = "STUDIO_DECODE_COMPILE"
COMPILE_SCOPES = ("layer", "step")


def compile_scope() -> str:
    """The decode step's compile scope, from ``STUDIO_DECODE_COMPILE`` (default "layer")."""
    scope = os.environ.get(COMPILE_SCOPE_ENV, "layer")
    if scope not in COMPILE_SCOPES:
        raise ValueError(f"{COMPILE_SCOPE_ENV}: {scope!r}; allowed: {', '.join(COMPILE_SCOPES)}")
    return scope


@dataclass(frozen=True)
class SamplingSpec:
    """What a token step needs besides the logits; a captured step is recorded for one (the
    draw of :class:`SamplingSettings` without its seed and sample count, which change per call
    and must not cost a capture)."""

    temperature: float
    top_p: float
    pad_id: int
    eos_ids: tuple[int, ...]
    max_new_tokens: int

    @classmethod
    def of(cls, sampling: SamplingSettings, pad_id: int, eos_ids: Sequence[int]) -> SamplingSpec:
        # The end ids as a set (sorted): callers that list them in another order share a graph.
        ids = tuple(sorted(set(eos_ids)))
        return cls(sampling.temperature, sampling.top_p, pad_id, ids, sampling.max_new_tokens)


class TokenBuffers:
    """The loop's record on the device: sampled tokens and log-probabilities by column, which
    rows have finished, and the next column."""

    def __init__(self, rows: int, spec: SamplingSpec, device: torch.device) -> None:
        shape = (rows, spec.max_new_tokens)
        self.pad_id = spec.pad_id
        self.out_tokens = torch.full(shape, spec.pad_id, dtype=torch.long, device=device)
        self.out_logprobs = torch.zeros(shape, dtype=torch.float32, device=device)
        self.done = torch.zeros(rows, dtype=torch.bool, device=device)
        self.column = torch.zeros(1, dtype=torch.long, device=device)
        self.eos = torch.tensor(spec.eos_ids or (-1,), dtype=torch.long, device=device)

    def reset(self) -> None:
        self.out_tokens.fill_(self.pad_id)
        self.out_logprobs.zero_()
        self.done.zero_()
        self.column.zero_()


def record_token(
    logits: torch.Tensor,
    spec: SamplingSpec,
    buffers: TokenBuffers,
    generator: torch.Generator | None,
    fused: bool,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sample the next token of each row, write it and its log-probability into the buffers'
    current column (padding for finished rows) and move to the next column. No host sync.

    ``rows`` (M,): the buffers' rows that ``logits`` (M, V) are of, when not all of them."""
    tokens, logprobs = sample_tokens(logits, spec.temperature, spec.top_p, generator, fused=fused)
    done = buffers.done if rows is None else buffers.done[rows]
    tokens, logprobs = tokens.masked_fill(done, spec.pad_id), logprobs.masked_fill(done, 0)
    finished = done | torch.isin(tokens, buffers.eos)
    if rows is None:
        buffers.out_tokens.index_copy_(1, buffers.column, tokens[:, None])
        buffers.out_logprobs.index_copy_(1, buffers.column, logprobs[:, None])
        buffers.done.copy_(finished)
    else:
        buffers.out_tokens.index_put_((rows, buffers.column), tokens)
        buffers.out_logprobs.index_put_((rows, buffers.column), logprobs)
        buffers.done.index_put_((rows,), finished)
    buffers.column += 1
    return tokens


class DecodeGraph:
    """Static inputs of a token step (decode, sample, record, advance) and, on CUDA, its
    captured graph, so each token is one replay; for one cache shape and sampling spec."""

    def __init__(
        self,
        decoder: StaticDecoder,
        cache: StaticKVCache,
        use_graph: bool,
        compile_step: bool,
        sampling: SamplingSpec,
    ) -> None:
        device = cache.keys[0].device
        n, length = cache.num_rows, cache.max_len
        self.decoder, self.cache, self.sampling = decoder, cache, sampling
        self.tokens = torch.zeros(n, dtype=torch.long, device=device)
        self.positions = torch.zeros(n, dtype=torch.long, device=device)
        self.slot = torch.zeros(1, dtype=torch.long, device=device)
        self.valid = torch.zeros(n, length, dtype=torch.bool, device=device)
        self.buffers = TokenBuffers(n, sampling, device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.fused_sampler = compile_step
        self.compiled: Callable[[], torch.Tensor] | None = None
        self.compiled_layer: LayerStep | None = None
        if compile_step and compile_scope() == "step":
            self.compiled = torch.compile(self._step, dynamic=False)
        elif compile_step:
            self.compiled_layer = torch.compile(decoder.decode_layer, dynamic=False)
        if use_graph:
            self._capture()

    @property
    def is_compiled(self) -> bool:
        """Whether the decode runs compiled (it falls back to eager if compiling fails)."""
        return self.compiled is not None or self.compiled_layer is not None

    def _step(self) -> torch.Tensor:
        return self.decoder.decode(
            self.cache, self.tokens, self.positions, self.slot, self.valid, self.compiled_layer
        )

    def _fused_step(self) -> torch.Tensor:
        if self.is_compiled:
            try:
                return self.compiled() if self.compiled is not None else self._step()
            except Exception as exc:  # no compiler toolchain, an op inductor cannot lower...
                logger.warning("torch.compile of the decode step failed (%s); running eager", exc)
                self.compiled = self.compiled_layer = None
        return self._step()

    def decode(self) -> torch.Tensor:
        """One decode step's logits, outside any graph (for sampling with a generator)."""
        return self._fused_step()

    def _token_step(self) -> None:
        tokens = record_token(
            self._fused_step(), self.sampling, self.buffers, None, self.fused_sampler
        )
        self.advance(tokens)

    def advance(self, tokens: torch.Tensor) -> None:
        """Feed ``tokens`` to the next decode step, one position further on."""
        self.tokens.copy_(tokens)
        self.positions += 1
        self.slot += 1

    def _capture(self) -> None:
        # Warm up on a side stream (lazy kernel and workspace set-up), then record one step.
        # The garbage these steps write is overwritten before it is ever read.
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        started = time.perf_counter()
        with torch.cuda.stream(stream):
            for _ in range(3):
                self.slot.zero_()
                self.buffers.column.zero_()
                self._token_step()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: a capture on the rollout worker's thread (training.rollout async) is not
        # broken by the training thread's own CUDA calls meanwhile. A graph's kernels keep the
        # priority of the stream they were captured on: high, so that a step sampled beside an
        # update (async) is not queued behind the update's kernels.
        capture_stream = torch.cuda.Stream(priority=-1)
        with torch.cuda.graph(self.graph, stream=capture_stream, capture_error_mode="thread_local"):
            self._token_step()
        logger.info(
            "Captured the token step (%s) in %.1f s",
            "compiled" if self.is_compiled else "eager",
            time.perf_counter() - started,
        )

    def run_token(self) -> None:
        """One whole token step: a replay, or eager without a graph."""
        if self.graph is None:
            self._token_step()
        else:
            self.graph.replay()


def decode_live_rows(g: DecodeGraph, spec: SamplingSpec, generator: torch.Generator | None) -> int:
    """Eager token steps after the first over the rows still going: once a quarter of them
    have finished, the others move to the front of the cache and the batch shrinks to them.

    One long completion otherwise keeps every finished row decoding: SmolLM2's token step on
    a 2-core CPU took 73 ms for 16 rows, 50 for 4 and 30 for one. A graph replays one fixed
    shape, so a captured step decodes all rows instead. Returns the steps taken."""
    buffers, cache = g.buffers, g.cache
    tokens, positions, valid = g.tokens, g.positions, g.valid
    live = torch.arange(cache.num_rows, device=tokens.device)  # the buffers' row of each
    # A check reads the device; on the CPU that costs nothing, elsewhere a sync.
    check_every = 1 if tokens.device.type == "cpu" else FINISH_CHECK_EVERY
    steps = 1
    while steps < spec.max_new_tokens:
        if steps % check_every == 0:
            going = (~buffers.done[live]).nonzero().squeeze(-1)
            if len(going) == 0:
                break
            if len(going) <= len(live) * 3 // 4:
                cache = cache.keep_rows(going, int(g.slot))
                live, tokens, positions, valid = (
                    live[going],
                    tokens[going],
                    positions[going],
                    valid[going],
                )
        logits = g.decoder.decode(cache, tokens, positions, g.slot, valid)
        tokens = record_token(logits, spec, buffers, generator, False, live)
        positions = positions + 1
        g.slot += 1
        steps += 1
    return steps
