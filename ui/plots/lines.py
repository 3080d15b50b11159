"""How one series becomes plotly traces: the user's :class:`ChartOptions`, thinning to at most
:data:`MAX_POINTS` points, EMA smoothing, and the line (the raw one faint behind a smoothed one).
:mod:`ui.plots.charts` puts these lines into figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ui.runs.state import Series

MAX_POINTS = 2000  # longer series are thinned for drawing (every k-th point, plus the last)


def _kept(n: int) -> list[int]:
    """Indices of at most about :data:`MAX_POINTS` of ``n`` points, evenly spaced, always the
    last."""
    if n <= MAX_POINTS:
        return list(range(n))
    keep = list(range(0, n, -(-n // MAX_POINTS)))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return keep


def thin(steps: Sequence[int], values: Sequence[float | None]) -> tuple[list, list]:
    """At most about :data:`MAX_POINTS` points of a series, evenly spaced, always the last."""
    keep = _kept(len(steps))
    return [steps[i] for i in keep], [values[i] for i in keep]


@dataclass(frozen=True)
class ChartOptions:
    """How the user wants lines drawn, as the trackers they know offer it.

    ``smoothing`` is the EMA weight of the past in [0, 1) (0: raw lines only); ``x`` is
    ``"step"`` or ``"time"`` (minutes since the run's first point); ``log_y`` a log y axis.
    """

    smoothing: float = 0.0
    x: str = "step"
    log_y: bool = False

    @classmethod
    def from_inputs(cls, smoothing: Any, x: Any, log_y: Any) -> ChartOptions:
        """Options from the page's controls; anything out of range falls back to the default."""
        try:
            weight = float(smoothing)
        except (TypeError, ValueError):
            weight = 0.0
        weight = weight if math.isfinite(weight) and 0.0 <= weight < 1.0 else 0.0
        return cls(weight, "time" if x == "time" else "step", log_y is True)


def ema(values: Sequence[float | None], weight: float) -> list[float | None]:
    """Debiased exponential moving average, as TensorBoard's scalar smoothing (and W&B's
    "exponential moving average") draw it: ``last = weight * last + (1 - weight) * v``, divided by
    ``1 - weight ** n`` over the ``n`` finite points seen so far so the start is not pulled to 0.
    Missing or non-finite points stay gaps and do not move the average."""
    out: list[float | None] = []
    last, n = 0.0, 0
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(None)
            continue
        last = weight * last + (1.0 - weight) * v
        n += 1
        # 12 significant digits: a constant series stays constant instead of a zigzag of
        # rounding noise that the axis would stretch to full height.
        out.append(float(f"{last / (1.0 - weight**n):.12g}"))
    return out


def _x(s: Series, options: ChartOptions, t0: float | None) -> list:
    if options.x == "time" and t0 is not None and len(s.times) == len(s.steps):
        return [(t - t0) / 60.0 for t in s.times]
    return list(s.steps)


def series_lines(
    name: str,
    s: Series,
    color: str,
    width: float,
    options: ChartOptions = ChartOptions(),  # frozen: one shared default is safe
    t0: float | None = None,
) -> list[dict]:
    """The traces of one series: the line, or with smoothing the smoothed line over the raw
    one drawn faint behind it (one legend entry toggles both)."""
    keep = _kept(len(s.steps))
    x_all = _x(s, options, t0)
    x = [x_all[i] for i in keep]
    raw = [s.values[i] for i in keep]
    line = {
        "type": "scatter",
        "meta": {"series": name},  # the CSV download's series column
        "x": x,
        "y": raw,
        "customdata": [s.steps[i] for i in keep],  # each point's step, for the CSV by time
        "name": name,
        "legendgroup": name,
        "mode": "lines+markers" if len(x) < 50 else "lines",
        "line": {"color": color, "width": width},
        "connectgaps": False,
    }
    if not options.smoothing:
        return [line]
    smoothed = ema(s.values, options.smoothing)
    faint = {**line, "opacity": 0.25, "showlegend": False, "hoverinfo": "skip", "mode": "lines"}
    smooth = {**line, "y": [smoothed[i] for i in keep], "meta": {"series": f"{name} (smoothed)"}}
    return [faint, smooth]  # one point still shows as one
