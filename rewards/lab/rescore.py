"""A spec applied to a finished run's stored samples: what would it have said at every step?

A run stores, per logged step, the prompt, completion, gold answer, total and per-component trace
of some completions (``storage.records.samples``). Re-scoring runs the new spec's components on
those texts step by step (each step's samples are one composer batch, as when they were stored) and
compares the new total with the stored one: per-step means, the samples that disagree most and
the new spec's group diagnostics on what the model actually learned to write.

Runs store neither token ids nor dataset columns other than the gold answer, and re-scoring runs
no models or user code: components that need one of those are left out and named, with the
reason (:func:`unstored_needs`). A spec's weight schedules apply at each sample's step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from rewards.analysis.diagnostics import group_diagnostics
from rewards.composer import ScoredSample
from rewards.lab.batch import Generations
from rewards.spec import RewardSpec

#: Samples listed as disagreeing most.
TOP_DISAGREEMENTS = 10
#: Characters of a prompt or completion shown in the disagreement list.
SHOWN_CHARS = 600
#: Components that run a model or the user's code: never re-scored here.
NEEDS_MORE = {
    "judge": "runs a judge model",
    "reward_model": "runs a reward model",
    "python": "runs your code on dataset columns runs do not store",
}


class StoredSample(Protocol):
    """What re-scoring reads of a stored sample (``storage.sqlite.schema.Sample`` has it)."""

    step: int
    group: int | None
    prompt: str
    completion: str
    answer: str | None
    total: float | None


def unstored_needs(spec: RewardSpec) -> dict[str, str]:
    """Metric name -> why that enabled component cannot score a run's stored samples."""
    out = {}
    for name, comp in spec.enabled_components():
        if comp.name in NEEDS_MORE:
            out[name] = f"{NEEDS_MORE[comp.name]}; re-scoring runs rule-based components only"
        elif comp.params.get("unit") == "tokens":
            out[name] = (
                "counts tokens, and runs do not store token ids; set its unit to characters "
                "or words to re-score"
            )
        elif comp.params.get("gold_column", "answer") != "answer":
            out[name] = (
                f"reads column {comp.params['gold_column']!r}; runs store only the gold answer "
                "('answer')"
            )
    return out


def scorable_part(spec: RewardSpec) -> tuple[RewardSpec, dict[str, str]]:
    """``spec`` with the components :func:`unstored_needs` names disabled, and those reasons.

    Raises ``ValueError`` when no enabled component is left.
    """
    skipped = unstored_needs(spec)
    if not skipped:
        return spec, {}
    names = spec.metric_names(all_components=True)
    comps = [
        replace(c, enabled=c.enabled and n not in skipped)
        for n, c in zip(names, spec.components, strict=True)
    ]
    # Keep labels so the remaining components keep their metric names.
    comps = [replace(c, label=c.label or n) for n, c in zip(names, comps, strict=True)]
    if not any(c.enabled for c in comps):
        reasons = "; ".join(f"{n}: {why}" for n, why in skipped.items())
        raise ValueError(f"spec: no component can re-score stored samples ({reasons})")
    data = spec.to_dict()
    data["components"] = [c.to_dict() for c in comps]
    return RewardSpec.from_dict(data), skipped


@dataclass(frozen=True)
class Rescore:
    """The run's stored totals against the new spec's, step by step."""

    components: list[str]
    skipped: dict[str, str]
    steps: list[int]
    stored_mean: list[float | None]
    new_mean: list[float | None]
    samples: int
    max_abs_diff: float | None
    unscored_changes: int
    top: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "steps": len(self.steps),
            "max_abs_diff": self.max_abs_diff,
            "unscored_changes": self.unscored_changes,
            "components": self.components,
            "skipped": self.skipped,
            "per_step": [
                {"step": s, "stored_mean": a, "new_mean": b}
                for s, a, b in zip(self.steps, self.stored_mean, self.new_mean, strict=True)
            ],
            "top": self.top,
            "diagnostics": self.diagnostics,
        }


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def rescore(
    spec: RewardSpec,
    samples_by_step: Sequence[tuple[int, Sequence[StoredSample]]],
    spec_at: Callable[[RewardSpec, int], RewardSpec] | None = None,
) -> Rescore:
    """Re-score each step's stored samples with ``spec`` (see the module docstring).

    ``spec_at(spec, step)`` gives the spec in force at a step (its weight schedules applied);
    by default ``spec.at_step`` where the spec has schedules.
    """
    usable, skipped = scorable_part(spec)
    at = spec_at or _at_step
    steps, stored_mean, new_mean = [], [], []
    all_scored: list[ScoredSample] = []
    groups: list[tuple[int, Any]] = []
    rows: list[tuple[int, int, StoredSample, ScoredSample]] = []
    for step, samples in samples_by_step:
        if not samples:
            continue
        batch = Generations(
            [s.prompt for s in samples],
            [s.completion for s in samples],
            [(step, s.group) for s in samples],
            [s.answer for s in samples],
        )
        scored = batch.score(at(usable, step))
        steps.append(step)
        stored_mean.append(_mean([s.total for s in samples]))
        new_mean.append(_mean([s.total for s in scored]))
        all_scored.extend(scored)
        groups.extend(batch.groups)
        rows.extend((step, i, s, n) for i, (s, n) in enumerate(zip(samples, scored, strict=True)))
    diffs = [
        (abs(n.total - s.total), k)
        for k, (_, _, s, n) in enumerate(rows)
        if s.total is not None and n.total is not None
    ]
    unscored_changes = sum((s.total is None) != (n.total is None) for _, _, s, n in rows)
    diffs.sort(key=lambda d: -d[0])
    top = [_row(*rows[k]) for _, k in diffs[:TOP_DISAGREEMENTS]]
    dense = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    diag = group_diagnostics(all_scored, [dense[g] for g in groups]) if all_scored else None
    return Rescore(
        components=usable.metric_names(),
        skipped=skipped,
        steps=steps,
        stored_mean=stored_mean,
        new_mean=new_mean,
        samples=len(rows),
        max_abs_diff=float(diffs[0][0]) if diffs else None,
        unscored_changes=unscored_changes,
        top=top,
        diagnostics={} if diag is None else _diagnostics(diag.to_dict()),
    )


def _at_step(spec: RewardSpec, step: int) -> RewardSpec:
    at_step = getattr(spec, "at_step", None)
    return at_step(step) if at_step is not None else spec


def _diagnostics(d: dict[str, Any]) -> dict[str, Any]:
    """The diagnostics without the per-group list (one entry per step and prompt)."""
    return {k: v for k, v in d.items() if k != "groups"} | {"groups": len(d["groups"])}


def _row(step: int, index: int, stored: StoredSample, new: ScoredSample) -> dict[str, Any]:
    return {
        "step": step,
        "index": index,
        "prompt": stored.prompt[:SHOWN_CHARS],
        "completion": stored.completion[:SHOWN_CHARS],
        "answer": stored.answer,
        "stored_total": stored.total,
        "new_total": new.total,
        "diff": None if new.total is None or stored.total is None else new.total - stored.total,
        "new_raw": {t.name: t.raw for t in new.trace},
    }
