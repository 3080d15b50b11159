"""Held-out evaluation: accuracy and strict-format rate of a model on prompt rows.

Scores come from the reward library itself, so an evaluation and a training reward can never
disagree: accuracy is the ``correctness`` component (math mode, gold in the ``answer`` column),
format is the ``format`` component in ``strict`` mode (the whole reply is
``<think>…</think><answer>…</answer>``), and strict accuracy needs both.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.generation.runner import GenerationRunner
from engine.generation.sampling import GeneratedSample, sample, sample_on_captured_graph
from engine.generation.settings import SamplingSettings

logger = logging.getLogger(__name__)


@dataclass
class EvalScores:
    """Rates over one group of samples.

    Attributes:
        n: samples in the group.
        n_scored: samples whose gold answer could be scored (the accuracy denominator).
        accuracy: share of scored samples whose final answer equals the gold.
        strict_accuracy: share of scored samples both correct and in strict format.
        format_rate: share of all samples in strict format.
        truncated_rate: share of samples that hit ``max_new_tokens``.
        pass_at_k: share of prompts with at least one correct sample (k = samples per prompt).
    """

    n: int = 0
    n_scored: int = 0
    accuracy: float = 0.0
    strict_accuracy: float = 0.0
    format_rate: float = 0.0
    truncated_rate: float = 0.0
    pass_at_k: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "n_scored": self.n_scored,
            "accuracy": self.accuracy,
            "strict_accuracy": self.strict_accuracy,
            "format_rate": self.format_rate,
            "truncated_rate": self.truncated_rate,
            "pass_at_k": self.pass_at_k,
        }


@dataclass
class EvalReport(EvalScores):
    """Scores over all rows, per difficulty level, and the samples they come from.

    Attributes:
        num_samples: samples per prompt (the k of ``pass_at_k``).
        temperature, max_new_tokens, seed: the sampling settings used.
        by_difficulty: ``str(level) -> EvalScores`` for rows with a ``difficulty``.
        samples: one record per sample (prompt_index, sample_index, text, correct, strict,
            truncated, difficulty); left out of :meth:`to_dict` unless asked for.
    """

    num_samples: int = 1
    temperature: float = 0.8
    max_new_tokens: int = 96
    seed: int = 0
    by_difficulty: dict[str, EvalScores] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        out = {
            **super().to_dict(),
            "num_samples": self.num_samples,
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "by_difficulty": {k: v.to_dict() for k, v in self.by_difficulty.items()},
        }
        if include_samples:
            out["samples"] = list(self.samples)
        return out


def scorers() -> tuple[Any, Any]:
    """The (correctness, strict format) reward functions evaluation scores with."""
    from rewards.registry import REGISTRY

    correctness = REGISTRY["correctness"].build({"mode": "math", "gold_column": "answer"})
    strict_format = REGISTRY["format"].build({"mode": "strict"}, name="format_strict")
    return correctness, strict_format


def score_texts(
    texts: Sequence[str], golds: Sequence[Any]
) -> tuple[list[float | None], list[bool]]:
    """Correctness values (``None``: unscorable) and strict-format flags of completion texts."""
    correctness, strict_format = scorers()
    correct = correctness(completions=list(texts), answer=list(golds))
    strict = [v == 1.0 for v in strict_format(completions=list(texts))]
    return correct, strict


def _rates(records: list[dict[str, Any]]) -> EvalScores:
    n = len(records)
    scored = [r for r in records if r["correct"] is not None]
    prompts: dict[int, bool] = {}
    for r in scored:
        prompts[r["prompt_index"]] = prompts.get(r["prompt_index"], False) or r["correct"]
    return EvalScores(
        n=n,
        n_scored=len(scored),
        accuracy=sum(bool(r["correct"]) for r in scored) / len(scored) if scored else 0.0,
        strict_accuracy=(
            sum(bool(r["correct"]) and r["strict"] for r in scored) / len(scored) if scored else 0.0
        ),
        format_rate=sum(r["strict"] for r in records) / n if n else 0.0,
        truncated_rate=sum(r["truncated"] for r in records) / n if n else 0.0,
        pass_at_k=sum(prompts.values()) / len(prompts) if prompts else 0.0,
    )


#: One completion per held-out row, at the training's default temperature and length.
ONE_SAMPLE = SamplingSettings(num_samples=1)


def evaluate(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    settings: SamplingSettings = ONE_SAMPLE,
    *,
    batch_size: int = 64,
    runner: GenerationRunner | None = None,
) -> EvalReport:
    """Sample ``settings.num_samples`` completions per row and score them (see the module
    docstring).

    ``rows`` are task rows (``prompt``, ``answer``, optional ``difficulty``), e.g.
    ``builtin_task().eval_rows(400)``. ``runner``: a run's rollout sampler; one sample per row
    is drawn on the graph it kept from the last rollout when that samples the same way (a
    rollout's cost, where transformers' ``generate`` took 22 s for SmolLM2's 200 prompts on an
    H100), else through ``generate``.
    """
    if not rows:
        raise ValueError("rows must not be empty")

    prompts = [r["prompt"] for r in rows]
    samples = None
    if runner is not None and settings.num_samples == 1:
        samples = sample_on_captured_graph(runner, tokenizer, prompts, settings)
    if samples is None:
        samples = _sample_eagerly(model, tokenizer, prompts, settings, batch_size)
    golds = [rows[s.prompt_index].get("answer") for s in samples]
    correct, strict = score_texts([s.text for s in samples], golds)
    records = []
    for s, c, f in zip(samples, correct, strict, strict=True):
        records.append(
            {
                "prompt_index": s.prompt_index,
                "sample_index": s.sample_index,
                "text": s.text,
                "correct": None if c is None else c == 1.0,
                "strict": f,
                "truncated": s.truncated,
                "difficulty": rows[s.prompt_index].get("difficulty"),
            }
        )
    overall = _rates(records)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["difficulty"] is not None:
            groups[str(r["difficulty"])].append(r)
    report = EvalReport(
        **overall.to_dict(),
        num_samples=settings.num_samples,
        temperature=settings.temperature,
        max_new_tokens=settings.max_new_tokens,
        seed=settings.seed,
        by_difficulty={k: _rates(v) for k, v in sorted(groups.items())},
        samples=records,
    )
    logger.info(
        "evaluated %d samples: accuracy %.3f, strict accuracy %.3f, strict format %.3f",
        report.n,
        report.accuracy,
        report.strict_accuracy,
        report.format_rate,
    )
    return report


def _sample_eagerly(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Any],
    settings: SamplingSettings,
    batch_size: int,
) -> list[GeneratedSample]:
    """transformers' ``generate``, eager, never compiled: on a GPU the run's decoder layers are
    compiled for training (engine.trainers.compiled_layers), and ``generate`` calls them with a
    KV cache, whose per-layer index dynamo specialises on: an evaluation before the first step
    filled the layers' compile cache (torch._dynamo's recompile_limit, 8) so that training then
    ran partly eager, slower and 4.6-18 GiB above the memory estimate on SmolLM2 (issue 22)."""
    import torch

    with torch.compiler.set_stance("force_eager"):
        return sample(model, tokenizer, prompts, settings, batch_size=batch_size)
