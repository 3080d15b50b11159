"""The weighted composer: per-sample totals with a trace of every component.

``total = sum(weight_k * raw_k)`` over the enabled components that scored the sample; a
component returning ``None`` ("cannot score") is skipped for that sample, and a sample no
component scored gets ``None``. That is TRL's rule for ``reward_funcs`` + ``reward_weights``
(``GRPOTrainer._calculate_rewards``: ``None`` becomes NaN, then ``nansum`` over the weighted
rewards; a row that is all NaN stays NaN). TRL sums in float32; we sum in float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewards.completions.text import completion_texts
from rewards.components.base import BatchContext
from rewards.spec import RewardSpec


@dataclass(frozen=True)
class ComponentTrace:
    """One component's part in one sample's total.

    ``raw`` is the component's unweighted score (``None``: not scored), ``contribution`` is
    ``weight * raw`` (``None`` when not scored), ``explanation`` one human line.
    """

    name: str
    raw: float | None
    weight: float
    contribution: float | None
    explanation: str
    component: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "component": self.component,
            "raw": self.raw,
            "weight": self.weight,
            "contribution": self.contribution,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class ScoredSample:
    """A completion's total reward (``None`` when no component scored it) and its trace."""

    total: float | None
    trace: list[ComponentTrace] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "trace": [t.to_dict() for t in self.trace]}

    def raw(self, name: str) -> float | None:
        """The raw score of the component with metric name ``name``."""
        for t in self.trace:
            if t.name == name:
                return t.raw
        raise KeyError(name)


def score(
    spec: RewardSpec,
    prompts: Sequence[Any] | None,
    completions: Sequence[Any],
    answers: Sequence[Any] | None = None,
    completion_ids: Sequence[Sequence[int]] | None = None,
    columns: dict[str, Sequence[Any]] | None = None,
) -> list[ScoredSample]:
    """Score a batch of completions under ``spec``, with a per-component trace for each.

    Args:
        spec: the reward.
        prompts: the prompts (aligned with ``completions``), or ``None``.
        completions: strings or TRL chat completions (``[{"role": "assistant", ...}]``).
        answers: gold answers aligned with completions (the ``answer`` column; also used for a
            component whose ``gold_column`` is not among ``columns``).
        completion_ids: token ids of each completion (needed for lengths in tokens).
        columns: further dataset columns by name, each aligned with completions.
    """
    texts = completion_texts(completions)
    columns = dict(columns or {})
    if answers is not None:
        columns.setdefault("answer", list(answers))
        for _, comp in spec.enabled_components():
            gold_column = comp.params.get("gold_column")
            if gold_column:
                columns.setdefault(gold_column, list(answers))
    ctx = BatchContext(len(texts), prompts, completion_ids, columns, completions=completions)
    per_component = []
    for fn, weight in spec.build():
        judgements = fn.judge(texts, ctx)
        if len(judgements) != len(texts):
            raise RuntimeError(f"{fn.__name__} returned {len(judgements)} scores for {len(texts)}")
        per_component.append((fn, weight, judgements))
    weights = [weight for _, weight, _ in per_component]
    out = []
    for i in range(len(texts)):
        trace = []
        for fn, weight, judgements in per_component:
            j = judgements[i]
            contribution = None if j.value is None else weight * j.value
            trace.append(
                ComponentTrace(
                    fn.__name__, j.value, weight, contribution, j.explanation, fn.component
                )
            )
        total = weighted_total([t.raw for t in trace], weights)
        out.append(ScoredSample(total, trace))
    return out


def weighted_total(values: Sequence[float | None], weights: Sequence[float]) -> float | None:
    """``sum(weight * value)`` over the values that are not None, in order; None when every
    value is None (TRL's ``nansum`` of the weighted rewards, with an unscored sample kept apart).

    Standalone (no imports): the exported reward module totals with this function's source.
    """
    total = 0.0
    scored = False
    for value, weight in zip(values, weights, strict=True):
        if value is not None:
            total += weight * value
            scored = True
    return total if scored else None
