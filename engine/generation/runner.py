"""The generation loop: bucketed prefill of distinct prompts, then graph-replayed decode steps.

Per call (one training step's rollout):

1. Distinct prompts are found (a GRPO group repeats its prompt G times) and prefilled once
   each; their keys/values are copied into the G cache rows that continue them.
2. The prompt width is rounded up to a bucket of ``PROMPT_BUCKET`` tokens, so the cache shape,
   and the decode graph captured for it, repeat from step to step.
3. The decode step multiplies by merged copies of the q/k/v and gate/up weights (LoRA merged
   in; :mod:`engine.generation.decode_weights`), refreshed at each call, and attends with one
   Triton kernel over the written positions (:mod:`engine.generation.attention_kernel`).
4. On CUDA a whole token step (decode, sample on the device, record, advance) is one replay of a
   CUDA graph; the loop checks every ``FINISH_CHECK_EVERY`` tokens whether every row has
   finished. Before capture the decode is compiled by ``torch.compile`` (inductor fuses the
   norms, rotary and gated-MLP element-wise work that otherwise costs a kernel each: gpt-fast's
   recipe), and the graph is recorded over the compiled kernels, as vLLM does. The cache keeps
   the widest prompt bucket seen, so a narrower step reuses it (and its graph). A seeded call
   seeds the device's default generator, the one the graph draws from, and restores it after.
5. Without a graph (the CPU), rows that have finished leave the batch as they end.

CUDA graphs record device addresses: weights updated in place by the optimizer (full or LoRA)
are seen by the next replay; if any parameter is re-allocated the graphs are captured again.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.generation.cache import StaticKVCache
from engine.generation.decode_weights import build_decode_weights
from engine.generation.decoder import StaticDecoder, base_model_of
from engine.generation.sampler import sample_tokens

logger = logging.getLogger(__name__)

PROMPT_BUCKET = 64
# How many decode steps pass between checks that every row has finished (each check syncs).
FINISH_CHECK_EVERY = 8
# Prompt tokens prefilled per forward: bounds the prefill's activation memory.
PREFILL_TOKENS = 16384


@dataclass
class Generation:
    """Completions of one call, in the order of the prompts given.

    ``completion_ids[i]`` ends with the end-of-sequence id when one was produced. On the device,
    ``token_rows`` (N, T) holds the same tokens (padding past each end) and ``logprob_rows``
    (N, T) the sampler's log-probabilities of them (after temperature; zero past each end);
    :attr:`logprobs` gives those as lists.
    """

    completion_ids: list[list[int]]
    token_rows: torch.Tensor
    logprob_rows: torch.Tensor
    truncated: list[bool]

    def first(self, n: int) -> Generation:
        """The completions of the first ``n`` prompts."""
        return Generation(
            self.completion_ids[:n], self.token_rows[:n], self.logprob_rows[:n], self.truncated[:n]
        )

    @property
    def logprobs(self) -> list[list[float]]:
        rows = self.logprob_rows.tolist()
        return [row[: len(ids)] for row, ids in zip(rows, self.completion_ids, strict=True)]


def bucket(width: int, size: int = PROMPT_BUCKET) -> int:
    return -(-width // size) * size


def distinct_prompts(prompts: Sequence[Sequence[int]]) -> tuple[list[list[int]], list[int]]:
    """The distinct prompts in first-seen order, and for each input the index of its prompt."""
    index: dict[tuple[int, ...], int] = {}
    sources = []
    for p in prompts:
        sources.append(index.setdefault(tuple(p), len(index)))
    return [list(p) for p in index], sources


@dataclass(frozen=True)
class SamplingSpec:
    """What a token step needs besides the logits; a captured step is recorded for one."""

    temperature: float
    top_p: float
    pad_id: int
    eos_ids: tuple[int, ...]
    max_new_tokens: int


class _TokenBuffers:
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
    buffers: _TokenBuffers,
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


class _DecodeGraph:
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
        self.buffers = _TokenBuffers(n, sampling, device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.fused_sampler = compile_step
        self.compiled = torch.compile(self._step, dynamic=False) if compile_step else None
        if use_graph:
            self._capture()

    def _step(self) -> torch.Tensor:
        return self.decoder.decode(self.cache, self.tokens, self.positions, self.slot, self.valid)

    def _fused_step(self) -> torch.Tensor:
        if self.compiled is not None:
            try:
                return self.compiled()
            except Exception as exc:  # no compiler toolchain, an op inductor cannot lower...
                logger.warning("torch.compile of the decode step failed (%s); running eager", exc)
                self.compiled = None
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
        with torch.cuda.graph(self.graph):
            self._token_step()
        logger.info(
            "Captured the token step (%s) in %.1f s",
            "compiled" if self.compiled is not None else "eager",
            time.perf_counter() - started,
        )

    def run_token(self) -> None:
        """One whole token step: a replay, or eager without a graph."""
        if self.graph is None:
            self._token_step()
        else:
            self.graph.replay()


def _decode_live_rows(
    g: _DecodeGraph, spec: SamplingSpec, generator: torch.Generator | None
) -> int:
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


@contextlib.contextmanager
def _device_rng_seeded(device: torch.device, seed: int | None) -> Iterator[None]:
    """Seed ``device``'s default CUDA generator for the block and restore its state after."""
    if seed is None:
        yield
        return
    index = device.index if device.index is not None else torch.cuda.current_device()
    with torch.random.fork_rng(devices=[index], device_type="cuda"):
        torch.cuda.default_generators[index].manual_seed(seed)
        yield


class GenerationRunner:
    """Samples completions from ``model`` with a static cache; keeps cache and graphs between
    calls while their shape and the model's weights' addresses stay the same."""

    def __init__(
        self,
        model: Any,
        use_graphs: bool | None = None,
        compile_step: bool | None = None,
        merge_weights: bool = True,
        fill_rows: bool | None = None,
    ) -> None:
        self.model = model
        self.merge_weights = merge_weights
        self.decoder = StaticDecoder(model)
        self.device = next(base_model_of(model).parameters()).device
        self.use_graphs = self.device.type == "cuda" if use_graphs is None else use_graphs
        self.compile_step = self.use_graphs if compile_step is None else compile_step
        # Fewer prompts than the kept graph's rows (a tool loop's later turns continue some
        # rollouts; evaluation's last batch) are filled up to them: decoding the filler rows
        # costs less than compiling and capturing a step for each row count.
        self.fill_rows = self.use_graphs if fill_rows is None else fill_rows
        self._graph: _DecodeGraph | None = None
        self._weights_key: tuple[int, ...] = ()
        # The widest prompt a run will sample (0: unknown): the first cache is made that wide,
        # so a wider prompt bucket later in the run never compiles and captures a new step.
        self.prompt_width = 0

    @property
    def captured(self) -> tuple[int, SamplingSpec] | None:
        """The rows and sampling of the cache and graph kept from the last call (a call with
        the same reuses them); None before the first call."""
        g = self._graph
        return None if g is None else (g.cache.num_rows, g.sampling)

    def release(self) -> None:
        """Free the cache, the captured graph and the merged weights (the next call allocates
        them again)."""
        self._graph = None
        self.decoder.weights = None

    def _decode_graph(
        self, rows: int, length: int, dtype: torch.dtype, sampling: SamplingSpec
    ) -> _DecodeGraph:
        weights_key = tuple(p.data_ptr() for p in self.model.parameters())
        g = self._graph
        if (
            g is None
            or not g.cache.fits(rows, length, dtype)
            or g.sampling != sampling
            or weights_key != self._weights_key
        ):
            self._graph = None  # free the old cache before allocating the new one
            self.decoder.weights = None
            if self.merge_weights:
                self.decoder.weights = build_decode_weights(self.decoder.body.layers)
            s = self.decoder.shape
            cache = StaticKVCache(
                s.num_layers, rows, s.kv_heads, length, s.head_dim, dtype, self.device
            )
            self._graph = _DecodeGraph(
                self.decoder, cache, self.use_graphs, self.compile_step, sampling
            )
            self._weights_key = weights_key
            logger.info(
                "Decode %s for %d rows x %d positions",
                "graph" if self.use_graphs else "step",
                rows,
                length,
            )
        return self._graph

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        eos_ids: Sequence[int],
        pad_id: int,
        seed: int | None = None,
    ) -> Generation:
        """Sample one completion per prompt in ``prompts`` (token ids; repeats share a prefill)."""
        if not prompts:
            return Generation([], torch.zeros(0, 0, dtype=torch.long), torch.zeros(0, 0), [])
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        n, kept = len(prompts), self.captured
        fill = kept[0] - n if self.fill_rows and kept is not None else 0
        if fill > 0:  # repeats of the first prompt: they share its prefill
            prompts = [*prompts, *[prompts[0]] * fill]
        was_training = self.model.training
        self.model.eval()  # no dropout while sampling
        try:
            out = self._generate(
                prompts, max_new_tokens, temperature, top_p, list(eos_ids), pad_id, seed
            )
        finally:
            self.model.train(was_training)
        return out.first(n) if fill > 0 else out

    def _generate(self, prompts, max_new_tokens, temperature, top_p, eos_ids, pad_id, seed):
        device = self.device
        distinct, sources = distinct_prompts(prompts)
        width = bucket(max(self.prompt_width, *(len(p) for p in distinct)))
        dtype = self.decoder.body.embed_tokens.weight.dtype  # that of the hidden states
        old = self._graph
        if old is not None and old.cache.num_rows == len(prompts):
            # A narrower prompt bucket reuses the wider cache (and its compiled graph).
            width = max(width, old.cache.max_len - max_new_tokens)
        # The end ids as a set (sorted): callers that list them in another order share a graph.
        spec = SamplingSpec(temperature, top_p, pad_id, tuple(sorted(set(eos_ids))), max_new_tokens)
        g = self._decode_graph(len(prompts), width + max_new_tokens, dtype, spec)
        if self.decoder.weights is not None:
            self.decoder.weights.refresh()  # the optimizer has changed the weights since
        buffers = g.buffers
        buffers.reset()
        seeded = seed is not None and temperature > 0
        # A captured step draws from the device's default generator (the only one a graph
        # replays), seeded for this call and restored after; without a graph, a generator.
        generator = None
        if seeded and g.graph is None:
            generator = torch.Generator(device=device).manual_seed(seed)
        with _device_rng_seeded(device, seed if seeded and g.graph is not None else None):
            return self._sample(prompts, distinct, sources, width, g, spec, generator)

    def _sample(self, prompts, distinct, sources, width, g, spec, generator) -> Generation:
        device, pad_id, buffers = self.device, spec.pad_id, g.buffers
        # Prefill each distinct prompt once, in chunks of rows.
        ids = torch.full((len(distinct), width), pad_id, dtype=torch.long)
        valid = torch.zeros((len(distinct), width), dtype=torch.bool)
        for u, p in enumerate(distinct):
            ids[u, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            valid[u, width - len(p) :] = True
        ids, valid = ids.to(device), valid.to(device)
        source_of = torch.tensor(sources, dtype=torch.long, device=device)  # (N,)
        first_logits = []
        per_chunk = max(1, PREFILL_TOKENS // width)
        for start in range(0, len(distinct), per_chunk):
            stop = min(start + per_chunk, len(distinct))
            rows = ((source_of >= start) & (source_of < stop)).nonzero().squeeze(-1)
            logits = self.decoder.prefill(
                g.cache, ids[start:stop], valid[start:stop], rows, source_of[rows] - start
            )
            first_logits.append(logits)
        logits = torch.cat(first_logits)[source_of]  # (N, V)

        g.valid.zero_()
        g.valid[:, :width] = valid[source_of]
        fused = self.compile_step
        g.tokens.copy_(record_token(logits, spec, buffers, generator, fused))
        g.positions.copy_(torch.tensor([len(p) for p in prompts], device=device))
        g.slot.fill_(width)
        if g.graph is None and g.compiled is None:
            return self._collect(buffers, _decode_live_rows(g, spec, generator))
        steps = 1
        while steps < spec.max_new_tokens:
            if steps % FINISH_CHECK_EVERY == 0 and bool(buffers.done.all()):
                break
            if generator is None:
                g.run_token()
            else:
                g.advance(record_token(g.decode(), spec, buffers, generator, fused))
            steps += 1
        return self._collect(buffers, steps)

    @staticmethod
    def _collect(buffers: _TokenBuffers, steps: int) -> Generation:
        """Cut each row after its first end-of-sequence token (found on the device: one copy
        of the tokens and their lengths to the host, no per-token Python)."""
        tokens, logprobs = buffers.out_tokens[:, :steps], buffers.out_logprobs[:, :steps]
        ends = torch.isin(tokens, buffers.eos)
        has_end = ends.any(dim=1)
        lengths = torch.where(has_end, ends.int().argmax(dim=1) + 1, steps).tolist()
        return Generation(
            completion_ids=[row[:end] for row, end in zip(tokens.tolist(), lengths, strict=True)],
            # Copies: the loop's buffers are reused by the next call.
            token_rows=tokens.clone(),
            logprob_rows=logprobs.clone(),  # the loop wrote zeros past each row's end
            truncated=(~has_end).tolist(),
        )
