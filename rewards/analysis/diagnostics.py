"""Group diagnostics: does a reward give GRPO/RLOO a learning signal on a set of groups?

GRPO's advantage is ``(r - mean_group) / std_group`` (Shao et al. 2024, DeepSeekMath §4.1; TRL
``GRPOTrainer``), so only differences *within* a prompt's group of completions teach anything:
a group whose completions all score the same gives zero advantage and zero gradient (TRL logs
the share of such groups as ``frac_reward_zero_std``). These diagnostics say how much signal
there is and which component it comes from:

- per group: size, mean and standard deviation of the totals (Bessel-corrected, as TRL's
  ``nanstd``; groups with fewer than two scored completions have std 0);
- the share of groups with zero std (``|std| <= 1e-8``, TRL's ``torch.isclose`` test);
- each component's share of the within-group reward variance: with ``c_k`` the component's
  contribution centred on its group mean and ``t`` the total centred likewise,
  ``share_k = cov(c_k, t) / var(t)``. The shares sum to 1; a negative share means the
  component pulls against the rest;
- Pearson correlations between components' raw scores (where both scored);
- warnings in plain language, with advice for a component that pays the same on every sample
  (:mod:`rewards.analysis.constant_components`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rewards.analysis.constant_components import constant_components
from rewards.composer import ScoredSample
from rewards.spec import RewardSpec

#: A group std at or below this counts as zero (``torch.isclose(std, 0)``'s default atol).
ZERO_STD = 1e-8


@dataclass(frozen=True)
class GroupStats:
    """One prompt's group: completions scored, mean and std of their totals."""

    group_id: int
    size: int
    scored: int
    mean: float | None
    std: float
    zero_std: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "size": self.size,
            "scored": self.scored,
            "mean": self.mean,
            "std": self.std,
            "zero_std": self.zero_std,
        }


@dataclass(frozen=True)
class GroupDiagnostics:
    """Learning-signal diagnostics over groups of completions (see the module docstring)."""

    groups: list[GroupStats]
    zero_std_fraction: float
    variance_share: dict[str, float | None]
    correlations: dict[str, dict[str, float | None]]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "groups": [g.to_dict() for g in self.groups],
            "zero_std_fraction": self.zero_std_fraction,
            "variance_share": dict(self.variance_share),
            "correlations": {k: dict(v) for k, v in self.correlations.items()},
            "warnings": list(self.warnings),
        }


def _std(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-24 or syy <= 1e-24:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def group_diagnostics(
    scored: list[ScoredSample], group_ids: list[int], spec: RewardSpec | None = None
) -> GroupDiagnostics:
    """Diagnostics for ``scored`` completions, ``group_ids[i]`` naming the prompt of sample i;
    ``spec`` (the reward that scored them) lets the advice name components' parameters."""
    if len(scored) != len(group_ids):
        raise ValueError(f"group_ids: {len(group_ids)} ids for {len(scored)} samples")
    names = [t.name for t in scored[0].trace] if scored else []
    members: dict[int, list[int]] = {}
    for i, gid in enumerate(group_ids):
        members.setdefault(gid, []).append(i)

    groups = []
    centred_total: list[float] = []
    centred_parts: dict[str, list[float]] = {n: [] for n in names}
    for gid, idx in members.items():
        rows = [i for i in idx if scored[i].total is not None]
        totals = [scored[i].total for i in rows]
        std = _std(totals)  # type: ignore[arg-type]
        mean = sum(totals) / len(totals) if totals else None  # type: ignore[arg-type]
        groups.append(GroupStats(gid, len(idx), len(rows), mean, std, std <= ZERO_STD))
        if len(rows) < 2:
            continue
        for i in rows:
            centred_total.append(scored[i].total - mean)  # type: ignore[operator]
        for k, name in enumerate(names):
            parts = [scored[i].trace[k].contribution or 0.0 for i in rows]
            part_mean = sum(parts) / len(parts)
            centred_parts[name].extend(p - part_mean for p in parts)

    var_total = sum(t * t for t in centred_total)
    share: dict[str, float | None] = {}
    for name in names:
        if var_total <= 1e-24:
            share[name] = None
        else:
            cov = sum(c * t for c, t in zip(centred_parts[name], centred_total, strict=True))
            share[name] = cov / var_total

    correlations: dict[str, dict[str, float | None]] = {n: {} for n in names}
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            pairs = [
                (s.trace[a].raw, s.trace[b].raw)
                for s in scored
                if s.trace[a].raw is not None and s.trace[b].raw is not None
            ]
            r = _pearson([p[0] for p in pairs], [p[1] for p in pairs])
            correlations[names[a]][names[b]] = r
            correlations[names[b]][names[a]] = r

    zero = sum(g.zero_std for g in groups) / len(groups) if groups else 0.0
    warnings = _warnings(scored, names, groups, zero, share, correlations, spec)
    return GroupDiagnostics(groups, zero, share, correlations, warnings)


def _warnings(
    scored: list[ScoredSample],
    names: list[str],
    groups: list[GroupStats],
    zero: float,
    share: dict[str, float | None],
    correlations: dict[str, dict[str, float | None]],
    spec: RewardSpec | None,
) -> list[str]:
    out = []
    if not scored:
        return ["no samples to diagnose"]
    if all(s.total is None for s in scored):
        return ["no sample could be scored: every component returned None"]
    if groups and all(g.size < 2 for g in groups):
        out.append("every group has a single completion: GRPO needs at least 2 per prompt")
    if zero >= 0.25:
        out.append(
            f"{zero:.0%} of groups score identically: GRPO gets no signal from them "
            "(sample prompts the model sometimes solves, or add a graded component)"
        )
    if len(names) > 1:
        for name in names:
            value = share[name]
            if value is not None and value >= 0.8:
                out.append(f"{name} explains {value:.0%} of reward variance")
            elif value is not None and value < -0.05:
                out.append(f"{name} works against the rest of the reward ({value:.0%} of variance)")
    for k, name in enumerate(names):
        raws = [s.trace[k].raw for s in scored]
        values = [r for r in raws if r is not None]
        missing = len(raws) - len(values)
        if missing:
            why = Counter(s.trace[k].explanation for s in scored if s.trace[k].raw is None)
            reason = why.most_common(1)[0][0]
            out.append(f"{name} could not score {missing / len(raws):.0%} of samples ({reason})")
    traces = [[t.to_dict() for t in s.trace] for s in scored]
    out.extend(c.message for c in constant_components(traces, min_samples=2, spec=spec))
    seen = set()
    for a in names:
        for b, r in correlations[a].items():
            if r is not None and abs(r) >= 0.95 and (b, a) not in seen:
                seen.add((a, b))
                out.append(f"{a} and {b} move together (r = {r:.2f}): one may be redundant")
    return out
