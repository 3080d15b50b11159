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
   recipe; one decoder block is compiled once and run for every block, so a deep model
   compiles no longer than a shallow one), and the graph is recorded over the compiled
   kernels, as vLLM does. The cache keeps the widest prompt bucket seen, so a narrower step
   reuses it (and its graph). A seeded call seeds the device's default generator, the one the
   graph draws from, and restores it after.
5. Without a graph (the CPU), rows that have finished leave the batch as they end.

CUDA graphs record device addresses: weights updated in place by the optimizer (full or LoRA)
are seen by the next replay; if any parameter is re-allocated the graphs are captured again.
The token step and its graph are :mod:`engine.generation.token_step`'s; this module keeps the
cache and graph between calls and runs the prefill and the loop.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.generation.cache import StaticKVCache
from engine.generation.decode_weights import build_decode_weights
from engine.generation.decoder import StaticDecoder, base_model_of
from engine.generation.settings import SamplingSettings
from engine.generation.token_step import (
    FINISH_CHECK_EVERY,
    DecodeGraph,
    SamplingSpec,
    TokenBuffers,
    decode_live_rows,
    record_token,
)

logger = logging.getLogger(__name__)

PROMPT_BUCKET = 64
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
        self._graph: DecodeGraph | None = None
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
    ) -> DecodeGraph:
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
            self._graph = DecodeGraph(
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
        sampling: SamplingSettings,
        *,
        eos_ids: Sequence[int],
        pad_id: int,
        seed: int | None = None,
        switch_to_eval: bool = True,
    ) -> Generation:
        """Sample one completion per prompt in ``prompts`` (token ids; repeats share a prefill)
        with ``sampling``'s temperature, top-p and length; ``seed`` seeds this call (a caller
        that splits a request into calls offsets the request's seed for each), None: unseeded.
        ``switch_to_eval`` False leaves the model's train/eval mode alone: a call on another
        thread while the model trains must not switch it under the update.
        """
        if not prompts:
            return Generation([], torch.zeros(0, 0, dtype=torch.long), torch.zeros(0, 0), [])
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        n, kept = len(prompts), self.captured
        fill = kept[0] - n if self.fill_rows and kept is not None else 0
        if fill > 0:  # repeats of the first prompt: they share its prefill
            prompts = [*prompts, *[prompts[0]] * fill]
        was_training = self.model.training
        if switch_to_eval:
            self.model.eval()  # no dropout while sampling
        try:
            out = self._generate(prompts, SamplingSpec.of(sampling, pad_id, eos_ids), seed)
        finally:
            if switch_to_eval:
                self.model.train(was_training)
        return out.first(n) if fill > 0 else out

    def _generate(
        self, prompts: Sequence[Sequence[int]], spec: SamplingSpec, seed: int | None
    ) -> Generation:
        device = self.device
        distinct, sources = distinct_prompts(prompts)
        width = bucket(max(self.prompt_width, *(len(p) for p in distinct)))
        dtype = self.decoder.body.embed_tokens.weight.dtype  # that of the hidden states
        old = self._graph
        if old is not None and old.cache.num_rows == len(prompts):
            # A narrower prompt bucket reuses the wider cache (and its compiled graph).
            width = max(width, old.cache.max_len - spec.max_new_tokens)
        g = self._decode_graph(len(prompts), width + spec.max_new_tokens, dtype, spec)
        if self.decoder.weights is not None:
            self.decoder.weights.refresh()  # the optimizer has changed the weights since
        buffers = g.buffers
        buffers.reset()
        seeded = seed is not None and spec.temperature > 0
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
        if g.graph is None and not g.is_compiled:
            return self._collect(buffers, decode_live_rows(g, spec, generator))
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
    def _collect(buffers: TokenBuffers, steps: int) -> Generation:
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
