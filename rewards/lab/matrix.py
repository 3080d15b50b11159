"""Raw component scores as a ``(samples, components)`` array, and totals under any weights.

The composer's total is ``sum_k w_k * raw_k`` over the components that scored the sample, added
in spec order starting from 0.0; a sample no component scored has no total (TRL: ``nansum`` of
the weighted rewards, all-NaN rows marked NaN; ``GRPOTrainer._generate_and_score_completions``).
:func:`weighted_totals` does the same additions in the same order on whole columns, so its
totals are bit-for-bit the composer's, for one weight vector or a thousand at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewards.composer import ScoredSample


@dataclass(frozen=True)
class ScoreMatrix:
    """Scores of ``S`` samples by ``K`` components, with the samples' groups.

    Attributes:
        names: metric names of the components, in spec order.
        components: registry names of the components (``correctness``, ...).
        weights: the spec's weights, ``(K,)``.
        raw: raw (unweighted) scores, ``(S, K)``; NaN where a component could not score.
        groups: dense group index per sample, ``(S,)``, 0..G-1 in order of first appearance.
        group_ids: the caller's group id for each dense index, ``(G,)``.
    """

    names: tuple[str, ...]
    components: tuple[str, ...]
    weights: np.ndarray
    raw: np.ndarray
    groups: np.ndarray
    group_ids: tuple[Any, ...]

    @property
    def samples(self) -> int:
        return self.raw.shape[0]

    @property
    def num_groups(self) -> int:
        return len(self.group_ids)

    def column(self, name: str) -> int:
        """Index of the component with metric name ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no component named {name!r}; have {', '.join(self.names)}") from None

    def totals(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Totals under ``weights`` (default: the spec's), ``(S,)`` or ``(P, S)``."""
        return weighted_totals(self.raw, self.weights if weights is None else weights)

    @classmethod
    def from_scored(cls, scored: Sequence[ScoredSample], group_ids: Sequence[Any]) -> ScoreMatrix:
        """From the composer's output (every sample's trace lists the same components)."""
        traces = [[t.to_dict() for t in s.trace] for s in scored]
        return cls.from_traces(traces, group_ids)

    @classmethod
    def from_traces(
        cls, traces: Sequence[Sequence[Mapping[str, Any]]], group_ids: Sequence[Any]
    ) -> ScoreMatrix:
        """From stored traces (``ComponentTrace.to_dict()`` per component, as runs store them)."""
        if len(traces) != len(group_ids):
            raise ValueError(f"group_ids: {len(group_ids)} ids for {len(traces)} samples")
        first = list(traces[0]) if traces else []
        names = tuple(str(t["name"]) for t in first)
        raw = np.full((len(traces), len(names)), np.nan)
        for i, trace in enumerate(traces):
            if tuple(str(t["name"]) for t in trace) != names:
                raise ValueError(f"traces[{i}]: components differ from the first sample's")
            for k, t in enumerate(trace):
                if t.get("raw") is not None:
                    raw[i, k] = float(t["raw"])
        dense, ids = dense_groups(group_ids)
        return cls(
            names=names,
            components=tuple(str(t.get("component") or t["name"]) for t in first),
            weights=np.array([float(t["weight"]) for t in first], dtype=np.float64),
            raw=raw,
            groups=dense,
            group_ids=ids,
        )


def dense_groups(group_ids: Sequence[Any]) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Group ids mapped to 0..G-1 in order of first appearance, and the ids by index."""
    index: dict[Any, int] = {}
    dense = np.array([index.setdefault(g, len(index)) for g in group_ids], dtype=np.int64)
    return dense, tuple(index)


def weighted_totals(raw: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The composer's totals of ``raw`` ``(S, K)`` under ``weights`` ``(K,)`` or ``(P, K)``.

    Returns ``(S,)`` or ``(P, S)``; NaN where no component scored the sample. Each component is
    added in spec order to a running total that starts at 0.0, only where it scored, exactly as
    :func:`rewards.composer.score` does, so the floats are identical.
    """
    w = np.asarray(weights, dtype=np.float64)
    single = w.ndim == 1
    w2 = np.atleast_2d(w)  # (P, K)
    if w2.shape[1] != raw.shape[1]:
        raise ValueError(f"weights: {w2.shape[1]} weights for {raw.shape[1]} components")
    scored = ~np.isnan(raw)  # (S, K)
    total = np.zeros((w2.shape[0], raw.shape[0]))  # (P, S)
    for k in range(raw.shape[1]):
        total = np.where(scored[:, k], total + w2[:, k, None] * raw[None, :, k], total)
    total[:, ~scored.any(axis=1)] = np.nan
    return total[0] if single else total
