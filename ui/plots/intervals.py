"""How far a held-out accuracy may move by chance: the Wilson score interval of a share.

A run's held-out accuracy is a share of ``n`` scored completions; on 50 prompts it moves by
about +-6 points between evaluations with no change in the policy. The view draws the interval
as a band around the accuracy and says it in the run's summary, so a rise inside it reads as
noise.
"""

from __future__ import annotations

import math

Z_95 = 1.959964  # the standard normal's 97.5th percentile: a two-sided 95% interval


def wilson_interval(share: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a share ``share`` of ``n`` trials (Wilson 1927, "Probable
    inference, the law of succession, and statistical inference", JASA 22(158); the form in
    Brown, Cai & DasGupta 2001, "Interval Estimation for a Binomial Proportion", eq. 4):
    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``. Unlike the normal (Wald)
    interval it stays inside [0, 1] and is not empty at 0% or 100%. ``n`` < 1: (0, 1)."""
    if n < 1:
        return 0.0, 1.0
    p = min(1.0, max(0.0, share))
    z2 = z * z
    centre = p + z2 / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    scale = 1 + z2 / n
    # It always holds p; the min/max only undo rounding (1 - 2e-16 at p = 1).
    return min(p, max(0.0, (centre - half) / scale)), max(p, min(1.0, (centre + half) / scale))


def interval_band(
    x: list, shares: list[float | None], counts: list[float | None], color: str
) -> list[dict]:
    """Two traces bounding the 95% Wilson interval of each point (``counts``: its n, None where
    unknown), filled between them; to be drawn under the line they surround."""
    bounds = [
        wilson_interval(p, int(n)) if p is not None and n else (None, None)
        for p, n in zip(shares, counts, strict=True)
    ]
    if all(lo is None for lo, _ in bounds):
        return []
    edge = {"type": "scatter", "x": x, "mode": "lines", "line": {"width": 0, "color": color}}
    quiet = {"showlegend": False, "hoverinfo": "skip", "connectgaps": False}
    upper = {**edge, **quiet, "y": [hi for _, hi in bounds], "meta": {"series": "95% upper"}}
    lower = {
        **edge,
        **quiet,
        "y": [lo for lo, _ in bounds],
        "fill": "tonexty",
        "fillcolor": "rgba(37, 99, 235, 0.15)",
        "meta": {"series": "95% lower"},
    }
    return [upper, lower]
