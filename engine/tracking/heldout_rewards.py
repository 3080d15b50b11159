"""The run's own reward on held-out samples: what the user's spec says about unseen prompts.

Evaluation of the built-in task checks arithmetic answers and the strict format
(:mod:`engine.tracking.evaluation`); a user's dataset has its own reward instead. The held-out
samples are scored with the run's spec through the composer, so held-out and training numbers come
from the same code: the mean total, each component's raw mean, and accuracy (the share of scored
samples paid 1.0) where the spec has a ``correctness`` component.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.tracking import metric_names
from rewards.composer import score
from rewards.spec import RewardSpec


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def heldout_reward_metrics(
    spec: RewardSpec, rows: Sequence[dict[str, Any]], samples: Sequence[dict[str, Any]]
) -> dict[str, float]:
    """Metrics of ``spec`` over held-out ``samples`` (records with ``prompt_index`` and ``text``,
    and ``conversation`` for a tool rollout, as :func:`engine.tracking.evaluation.evaluate` and
    :func:`engine.tracking.tool_evaluation.evaluate_with_tools` return them) of ``rows``; a metric
    no sample scored is left out."""
    if not samples:
        return {}
    source = [rows[s["prompt_index"]] for s in samples]
    columns = {
        key: [row.get(key) for row in source]
        for key in ("answer", "difficulty")
        if any(key in row for row in source)
    }
    # A tool rollout is scored as its conversation, as the trainer hands it to the reward.
    completions = [s.get("conversation") or s["text"] for s in samples]
    scored = score(spec, [row["prompt"] for row in source], completions, columns=columns)
    found: dict[str, float | None] = {
        metric_names.EVAL_REWARD_TOTAL: _mean([s.total for s in scored if s.total is not None])
    }
    for name, comp in spec.enabled_components():
        raws = [v for s in scored if (v := s.raw(name)) is not None]
        found[metric_names.eval_component_metric(name)] = _mean(raws)
        if comp.name == "correctness":
            found[metric_names.EVAL_ACCURACY] = _mean([float(v == 1.0) for v in raws])
    return {k: v for k, v in found.items() if v is not None}
