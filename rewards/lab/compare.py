"""A/B of reward specs on the same generations: where do they disagree, and does it matter?

Each spec scores the same completions; against the first spec (the baseline) every other one
reports: per-sample totals and their difference; GRPO advantages under each (TRL's formulas, see
:mod:`rewards.lab.advantages`) and the samples whose advantage changes sign; per group, the
Spearman rank correlation of the learner's scores (rank of averages for ties; Spearman 1904)
and whether the best sample changes; the share of zero-variance groups; the hacking probes'
payoffs. A sample's *disagreement* is ``|A_b - A_a|``, how differently the two specs would push
on it; tables sort by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewards.lab.advantages import Advantages, grpo_advantages
from rewards.lab.batch import Generations
from rewards.lab.matrix import ScoreMatrix
from rewards.lab.probe_scores import Payoffs, payoffs
from rewards.lab.verdict import verdicts
from rewards.spec import RewardSpec

#: Most specs one comparison holds: the current one and three others.
MAX_SPECS = 4
#: An advantage this small has no sign worth reporting.
SIGN_EPS = 1e-6


@dataclass(frozen=True)
class SpecRun:
    """One spec on the batch: its scores, advantages and probe payoffs."""

    label: str
    spec: RewardSpec
    matrix: ScoreMatrix
    adv: Advantages
    probes: Payoffs | None

    @property
    def totals(self) -> np.ndarray:
        return self.adv.totals[0]

    @property
    def advantages(self) -> np.ndarray:
        return self.adv.advantages[0]

    def summary(self) -> dict[str, Any]:
        totals = self.totals[~np.isnan(self.totals)]
        return {
            "label": self.label,
            "components": list(self.matrix.names),
            "aggregation": self.spec.aggregation,
            "mean_total": float(totals.mean()) if totals.size else None,
            "zero_std_fraction": float(self.adv.zero_std_fraction[0]),
            "probes": self.probes.at(0) if self.probes is not None else {},
            "paying_probes": [
                n for n, v in (self.probes.at(0) if self.probes else {}).items() if v["pays"]
            ],
        }


@dataclass(frozen=True)
class Versus:
    """Spec ``b`` against the baseline ``a``, sample by sample and group by group."""

    label: str
    diff: np.ndarray  # (S,) total_b - total_a; NaN where either is unscored
    disagreement: np.ndarray  # (S,) |A_b - A_a|
    sign_flips: np.ndarray  # sample indices whose advantage changes sign
    spearman: list[float | None]  # per group
    best_changes: list[bool]  # per group

    def summary(self) -> dict[str, Any]:
        rho = [r for r in self.spearman if r is not None]
        diffs = self.diff[~np.isnan(self.diff)]
        return {
            "label": self.label,
            "mean_abs_diff": float(np.abs(diffs).mean()) if diffs.size else None,
            "max_abs_diff": float(np.abs(diffs).max()) if diffs.size else None,
            "sign_flips": [int(i) for i in self.sign_flips],
            "mean_spearman": float(np.mean(rho)) if rho else None,
            "best_changes": int(sum(self.best_changes)),
            "groups": len(self.best_changes),
        }


@dataclass(frozen=True)
class Comparison:
    """The baseline and up to three other specs on one batch."""

    runs: list[SpecRun]
    versus: list[Versus]
    group_ids: tuple[Any, ...]
    groups: np.ndarray

    def order(self, by: int = 0) -> list[int]:
        """Sample indices, most disagreement with the baseline (against ``versus[by]``) first."""
        if not self.versus:
            return list(range(len(self.groups)))
        return [int(i) for i in np.argsort(-self.versus[by].disagreement, kind="stable")]

    def rows(self, by: int = 0) -> list[dict[str, Any]]:
        """One row per sample, sorted by disagreement: group, totals and advantages per spec."""
        out = []
        for i in self.order(by):
            row: dict[str, Any] = {"sample": i, "group": self.group_ids[self.groups[i]]}
            for run in self.runs:
                row[f"total[{run.label}]"] = _num(run.totals[i])
                row[f"advantage[{run.label}]"] = _num(run.advantages[i])
            for v in self.versus:
                row[f"diff[{v.label}]"] = _num(v.diff[i])
                row[f"disagreement[{v.label}]"] = _num(v.disagreement[i])
                row[f"sign_flip[{v.label}]"] = bool(np.isin(i, v.sign_flips))
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "specs": [r.summary() for r in self.runs],
            "versus": [v.summary() for v in self.versus],
            "groups": [
                {
                    "group": self.group_ids[g],
                    **{f"spearman[{v.label}]": v.spearman[g] for v in self.versus},
                    **{f"best_changes[{v.label}]": v.best_changes[g] for v in self.versus},
                }
                for g in range(len(self.group_ids))
            ],
            "rows": self.rows(),
            "verdicts": verdicts(self),
        }


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def run_spec(
    label: str,
    spec: RewardSpec,
    batch: Generations,
    *,
    scale_rewards: str = "group",
    with_probes: bool = True,
) -> SpecRun:
    """Score ``batch`` under ``spec``: matrix, TRL advantages, probe payoffs."""
    matrix = batch.matrix(spec)
    adv = grpo_advantages(
        matrix.raw,
        matrix.weights,
        matrix.groups,
        matrix.num_groups,
        scale_rewards=scale_rewards,
        aggregation=spec.aggregation,
    )
    probes = payoffs(batch.probes(spec), matrix.weights) if with_probes else None
    return SpecRun(label, spec, matrix, adv, probes)


def compare(
    specs: Sequence[tuple[str, RewardSpec]],
    batch: Generations,
    *,
    scale_rewards: str = "group",
    with_probes: bool = True,
) -> Comparison:
    """The first spec against each of the others on ``batch`` (see the module docstring)."""
    if not 1 <= len(specs) <= MAX_SPECS:
        raise ValueError(f"specs: 1 to {MAX_SPECS} specs, got {len(specs)}")
    labels = [label for label, _ in specs]
    if len(set(labels)) != len(labels):
        raise ValueError("specs: each spec needs its own label")
    runs = [
        run_spec(label, spec, batch, scale_rewards=scale_rewards, with_probes=with_probes)
        for label, spec in specs
    ]
    base = runs[0]
    return Comparison(
        runs,
        [versus(base, other) for other in runs[1:]],
        base.matrix.group_ids,
        base.matrix.groups,
    )


def versus(a: SpecRun, b: SpecRun) -> Versus:
    """Spec run ``b`` against ``a`` (same batch)."""
    adv_a, adv_b = a.advantages, b.advantages
    flips = np.flatnonzero(
        (np.abs(adv_a) > SIGN_EPS) & (np.abs(adv_b) > SIGN_EPS) & (np.sign(adv_a) != np.sign(adv_b))
    )
    score_a, score_b = a.adv.scores[0], b.adv.scores[0]
    rho, best = [], []
    for g in range(a.matrix.num_groups):
        idx = np.flatnonzero(a.matrix.groups == g)
        rho.append(spearman(score_a[idx], score_b[idx]))
        best.append(best_changes(score_a[idx], score_b[idx]))
    return Versus(b.label, b.totals - a.totals, np.abs(adv_b - adv_a), flips, rho, best)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the average of the ranks they span."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    start = 0
    for end in range(1, len(x) + 1):
        if end == len(x) or sorted_x[end] != sorted_x[start]:
            ranks[order[start:end]] = (start + end + 1) / 2
            start = end
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rho of ``x`` and ``y`` over the pairs both scored; ``None`` when undefined
    (fewer than two pairs, or either side constant)."""
    ok = ~np.isnan(x) & ~np.isnan(y)
    if ok.sum() < 2:
        return None
    rx, ry = average_ranks(x[ok]), average_ranks(y[ok])
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    if denom <= 1e-12:
        return None
    return float(np.clip((rx * ry).sum() / denom, -1.0, 1.0))


def best_changes(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether no sample is best (tied best counts) under both ``x`` and ``y``."""
    if np.isnan(x).all() or np.isnan(y).all():
        return False
    best_x = set(np.flatnonzero(x == np.nanmax(x)))
    best_y = set(np.flatnonzero(y == np.nanmax(y)))
    return not best_x & best_y
