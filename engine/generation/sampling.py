"""Batched sampling of several completions per prompt, for the preview and for evaluation."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from engine.data.prompts import Prompt, adds_special_tokens, render_prompt
from engine.generation.runner import GenerationRunner
from engine.generation.settings import SamplingSettings
from engine.generation.token_step import SamplingSpec

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GeneratedSample:
    """One sampled completion.

    Attributes:
        prompt_index: position of its prompt in the input list.
        sample_index: 0..num_samples-1 within that prompt.
        text: the completion decoded without special tokens (as TRL hands it to rewards).
        token_ids: generated ids, including the end-of-sequence id when one was produced.
        truncated: True when ``max_new_tokens`` ran out before the end-of-sequence token.
        logprobs: the sampler's log-probability of each token (after temperature), when the
            static-cache runner sampled it; None from transformers' ``generate``.
    """

    prompt_index: int
    sample_index: int
    text: str
    token_ids: list[int]
    truncated: bool
    logprobs: list[float] | None = None


def encode_prompts(tokenizer: Any, prompts: Sequence[Prompt]) -> list[list[int]]:
    """Token ids of each prompt as :func:`render_prompt` lays it out (no padding)."""
    encoded = []
    for p in prompts:
        text = render_prompt(tokenizer, p)
        ids = tokenizer(text, add_special_tokens=adds_special_tokens(tokenizer, p))["input_ids"]
        encoded.append(list(ids))
    return encoded


def stop_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """The token ids that end a completion: the generation config's and the tokenizer's EOS."""
    ids: set[int] = set()
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (gen_eos, tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids


def sample_completions(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    num_samples: int = 1,
    temperature: float = 0.8,
    top_p: float = 1.0,
    max_new_tokens: int = 96,
    seed: int = 0,
    batch_size: int = 64,
    runner: GenerationRunner | None = None,
) -> list[GeneratedSample]:
    """:func:`sample` with the settings given as keywords (checked as :class:`SamplingSettings`
    checks them: ``ConfigError``, a ``ValueError``, naming the knob)."""
    settings = SamplingSettings(
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        num_samples=num_samples,
        seed=seed,
    )
    return sample(model, tokenizer, prompts, settings, batch_size=batch_size, runner=runner)


@torch.no_grad()
def sample(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    settings: SamplingSettings,
    *,
    batch_size: int = 64,
    runner: GenerationRunner | None = None,
) -> list[GeneratedSample]:
    """Sample ``settings.num_samples`` completions for each prompt, batched, left-padded.

    With a ``runner`` (see :mod:`engine.generation`) the static-cache sampler replaces
    transformers' ``generate``: each prompt is prefilled once for its samples, and the samples
    carry their log-probabilities.

    Reproducible: the same model, prompts and settings give the same samples (the torch RNG is
    seeded with ``settings.seed`` inside a forked RNG state, so the caller's RNG is untouched).
    ``temperature == 0`` decodes greedily. Results
    are ordered by (prompt_index, sample_index). Generation uses torch's intra-op threads as
    they are set, as TRL's trainers do, so PPO and GRPO sample at the same speed.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not prompts:
        return []

    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = tokenizer.eos_token_id
    eos_ids = stop_token_ids(model, tokenizer)
    encoded = encode_prompts(tokenizer, prompts)
    jobs = [(i, j) for i in range(len(prompts)) for j in range(settings.num_samples)]
    seed = settings.seed
    if runner is not None:
        return _sample_with_runner(
            runner,
            tokenizer,
            encoded,
            jobs,
            sampling=settings,
            seed=seed,
            batch_size=batch_size,
            eos_ids=eos_ids,
            pad_id=pad_id,
        )

    gen_kwargs: dict[str, Any] = {
        "max_new_tokens": settings.max_new_tokens,
        "pad_token_id": pad_id,
        "eos_token_id": sorted(eos_ids) if eos_ids else None,
    }
    if settings.greedy:
        gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    else:
        gen_kwargs.update(
            do_sample=True, temperature=settings.temperature, top_p=settings.top_p, top_k=0
        )

    was_training = model.training
    model.eval()
    results: list[GeneratedSample] = []
    fork_devices = [device] if device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=fork_devices):
            torch.manual_seed(seed)
            for start in range(0, len(jobs), batch_size):
                batch = jobs[start : start + batch_size]
                seqs = [encoded[i] for i, _ in batch]
                width = max(len(s) for s in seqs)
                input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
                attention_mask = torch.zeros((len(seqs), width), dtype=torch.long)
                for row, s in enumerate(seqs):  # left padding: prompts end where generation starts
                    input_ids[row, width - len(s) :] = torch.tensor(s, dtype=torch.long)
                    attention_mask[row, width - len(s) :] = 1
                out = model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention_mask.to(device),
                    **gen_kwargs,
                )
                new = out[:, width:].tolist()  # (B, T_new)
                cuts = [
                    next((k + 1 for k, t in enumerate(ids) if t in eos_ids), None) for ids in new
                ]
                # Without an end token the sequence ran the full max_new_tokens; with one,
                # what follows it is padding.
                kept = [
                    ids if cut is None else ids[:cut] for ids, cut in zip(new, cuts, strict=True)
                ]
                texts = tokenizer.batch_decode(kept, skip_special_tokens=True)
                for (i, j), ids, text, cut in zip(batch, kept, texts, cuts, strict=True):
                    results.append(GeneratedSample(i, j, text, ids, truncated=cut is None))
    finally:
        model.train(was_training)
    return results


def _sample_with_runner(
    runner: GenerationRunner,
    tokenizer: Any,
    encoded: list[list[int]],
    jobs: list[tuple[int, int]],
    *,
    sampling: SamplingSettings,
    seed: int,
    batch_size: int,
    eos_ids: set[int],
    pad_id: int,
) -> list[GeneratedSample]:
    """The ``jobs`` (prompt, sample) in batches of ``batch_size`` on ``runner``; batch ``b``
    seeded ``seed + its first job's index``."""
    results = []
    for start in range(0, len(jobs), batch_size):
        batch = jobs[start : start + batch_size]
        out = runner.generate(
            [encoded[i] for i, _ in batch],
            sampling,
            eos_ids=sorted(eos_ids),
            pad_id=pad_id,
            seed=seed + start,
        )
        texts = tokenizer.batch_decode(out.completion_ids, skip_special_tokens=True)
        for (i, j), ids, text, logprobs, truncated in zip(
            batch, out.completion_ids, texts, out.logprobs, out.truncated, strict=True
        ):
            results.append(GeneratedSample(i, j, text, ids, truncated, logprobs))
    return results


def sample_on_captured_graph(
    runner: GenerationRunner,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    sampling: SamplingSettings,
) -> list[GeneratedSample] | None:
    """One completion per prompt from the graph the runner kept from its last call (a run's
    rollouts), in batches of its rows (the runner fills a smaller last batch up); None when the
    runner has no graph or samples differently (temperature, top-p, length), so sampling here
    would compile and capture a second step and evict the rollouts' one.

    The graph's end and padding ids are used, those of the rollouts it was captured for;
    ``sampling.num_samples`` is not read (one each).
    """
    kept = runner.captured
    if kept is None:
        return None
    rows, spec = kept
    if SamplingSpec.of(sampling, spec.pad_id, spec.eos_ids) != spec:
        return None
    jobs = [(i, 0) for i in range(len(prompts))]
    encoded = encode_prompts(tokenizer, prompts)
    return _sample_with_runner(
        runner,
        tokenizer,
        encoded,
        jobs,
        sampling=sampling,
        seed=sampling.seed,
        batch_size=rows,
        eos_ids=set(spec.eos_ids),
        pad_id=spec.pad_id,
    )
