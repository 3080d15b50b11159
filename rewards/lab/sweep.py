"""Weight sweeps: one or two component weights over a grid, every point a re-weighting.

For each grid point (the spec's weights with the swept ones replaced) on the same generations:

- the share of zero-variance groups (no GRPO signal; TRL's ``frac_reward_zero_std``);
- the Pearson correlation of the total with the correctness component's raw score, over the
  samples both scored (only where the spec has a ``correctness`` component);
- each component's share of the advantage mass: ``sum_s |part_sk| / sum_sk |part_sk|``, where
  ``part_sk`` is component k's part of sample s's advantage (its contribution centred like the
  total and over the same denominator; see :func:`rewards.lab.advantages.grpo_advantages`);
- each hacking probe's mean payoff and whether it pays (:mod:`rewards.lab.probe_scores`).

All points are computed together: ``(P, S, K)`` arrays, no Python loop over points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewards.lab.advantages import grpo_advantages
from rewards.lab.matrix import ScoreMatrix
from rewards.lab.probe_scores import Payoffs, ProbeScores, payoffs
from rewards.spec import WEIGHT_BOUNDS

#: Most grid points one sweep computes (bounds the memory of a request: P x S x K floats).
MAX_POINTS = 10_000
#: Most values along one axis.
MAX_AXIS_VALUES = 1_000


@dataclass(frozen=True)
class SweepAxis:
    """One swept weight: the component's metric name and the values it takes."""

    name: str
    values: np.ndarray

    @classmethod
    def linspace(cls, name: str, start: float, stop: float, num: int) -> SweepAxis:
        """``num`` evenly spaced weights from ``start`` to ``stop`` (each within the spec's
        weight range)."""
        if not 2 <= int(num) <= MAX_AXIS_VALUES:
            raise ValueError(f"num: 2 to {MAX_AXIS_VALUES} points along a weight, got {num}")
        for field, value in (("start", start), ("stop", stop)):
            problem = WEIGHT_BOUNDS.problem(value)
            if problem:
                raise ValueError(f"{field}: {problem}")
        return cls(name, np.linspace(float(start), float(stop), int(num)))


@dataclass(frozen=True)
class Sweep:
    """Sweep results over ``P`` grid points (row-major over the axes: the last axis fastest)."""

    axes: list[SweepAxis]
    weights: np.ndarray  # (P, K)
    names: tuple[str, ...]
    zero_std_fraction: np.ndarray  # (P,)
    correctness_corr: np.ndarray | None  # (P,); NaN where undefined
    advantage_share: np.ndarray  # (P, K)
    probes: Payoffs | None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.values) for a in self.axes)

    def grid(self, values: np.ndarray) -> np.ndarray:
        """A ``(P, ...)`` result laid out on the grid: ``(n1, ...)`` or ``(n1, n2, ...)``."""
        return values.reshape(*self.shape, *values.shape[1:])

    def onsets(self) -> dict[str, list[list[float]]]:
        """Per probe, the grid points (weight values) where it starts paying: it pays there and
        not one step lower along some axis (or it pays at the grid's first point)."""
        if self.probes is None:
            return {}
        pays = self.grid(self.probes.pays)  # (n1[, n2], R)
        out: dict[str, list[list[float]]] = {}
        for r, name in enumerate(self.probes.names):
            grid = pays[..., r]
            start = np.zeros_like(grid)
            start[(0,) * grid.ndim] = grid[(0,) * grid.ndim]
            for axis in range(grid.ndim):
                lower = np.zeros_like(grid)  # pays one step lower along this axis
                inner = (slice(None),) * axis + (slice(1, None),)
                lower[inner] = np.take(grid, range(grid.shape[axis] - 1), axis=axis)
                has_lower = np.zeros_like(grid)
                has_lower[inner] = True
                start |= grid & has_lower & ~lower
            points = np.argwhere(start)
            out[name] = [
                [float(self.axes[a].values[i]) for a, i in enumerate(point)] for point in points
            ]
        return out

    def to_dict(self) -> dict[str, Any]:
        def plain(x: np.ndarray | None) -> Any:
            return None if x is None else np.where(np.isnan(x), None, x).tolist()

        return {
            "axes": [{"name": a.name, "values": a.values.tolist()} for a in self.axes],
            "components": list(self.names),
            "zero_std_fraction": plain(self.zero_std_fraction),
            "correctness_corr": plain(self.correctness_corr),
            "advantage_share": {
                n: plain(self.advantage_share[:, k]) for k, n in enumerate(self.names)
            },
            "probes": {}
            if self.probes is None
            else {
                n: {
                    "mean_delta": plain(self.probes.mean_delta[:, r]),
                    "pays": self.probes.pays[:, r].tolist(),
                }
                for r, n in enumerate(self.probes.names)
            },
            "onsets": self.onsets(),
        }


def grid_weights(matrix: ScoreMatrix, axes: Sequence[SweepAxis]) -> np.ndarray:
    """``(P, K)``: the spec's weights with each axis's component set to every grid value."""
    if not 1 <= len(axes) <= 2:
        raise ValueError(f"axes: sweep one or two weights, got {len(axes)}")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise ValueError("axes: sweep two different components")
    points = int(np.prod([len(a.values) for a in axes]))
    if points > MAX_POINTS:
        raise ValueError(f"axes: {points:,} grid points; at most {MAX_POINTS:,}")
    columns = [matrix.column(a.name) for a in axes]
    mesh = np.meshgrid(*[a.values for a in axes], indexing="ij")
    weights = np.tile(matrix.weights, (points, 1))
    for col, values in zip(columns, mesh, strict=True):
        weights[:, col] = values.ravel()
    return weights


def sweep(
    matrix: ScoreMatrix,
    axes: Sequence[SweepAxis],
    *,
    probes: ProbeScores | None = None,
    scale_rewards: str = "group",
    aggregation: str = "sum_then_normalize",
) -> Sweep:
    """Every grid point of ``axes`` on ``matrix`` (see the module docstring)."""
    weights = grid_weights(matrix, axes)
    adv = grpo_advantages(
        matrix.raw,
        weights,
        matrix.groups,
        matrix.num_groups,
        scale_rewards=scale_rewards,
        aggregation=aggregation,
        with_parts=True,
    )
    mass = np.abs(adv.centred).sum(axis=1)  # (P, K)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = mass / mass.sum(axis=1, keepdims=True)
    corr = None
    if "correctness" in matrix.components:
        corr = _pearson_rows(adv.totals, matrix.raw[:, matrix.components.index("correctness")])
    return Sweep(
        list(axes),
        weights,
        matrix.names,
        adv.zero_std_fraction,
        corr,
        share,
        payoffs(probes, weights) if probes is not None else None,
    )


def _pearson_rows(totals: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``totals`` ``(P, S)`` with ``target`` ``(S,)`` over the samples
    where both are scored (the same samples for every row); NaN where either is constant."""
    ok = ~np.isnan(target) & ~np.isnan(totals[0])
    x = totals[:, ok] - totals[:, ok].mean(axis=1, keepdims=True)
    y = target[ok] - target[ok].mean()
    sxx, syy = (x * x).sum(axis=1), (y * y).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (x @ y) / np.sqrt(sxx * syy)
    return np.where((sxx > 1e-24) & (syy > 1e-24), np.clip(r, -1.0, 1.0), np.nan)
