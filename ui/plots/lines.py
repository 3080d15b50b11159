"""How one series becomes plotly traces: the user's :class:`ChartOptions`, thinning to at most
:data:`MAX_POINTS` points, debiased EMA smoothing with the window's min/max band, and the line
(the raw one faint behind a smoothed one), on the x axis picked (:mod:`ui.plots.x_axes`).
:mod:`ui.plots.charts` puts these lines into figures."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ui.plots.series import Series
from ui.plots.x_axes import STEP, X_AXES, RunClock, x_values

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

    ``smoothing`` is the EMA weight of the past in [0, 1) (0: raw lines only); ``x`` one of
    :data:`ui.plots.x_axes.X_AXES` (step, relative time, wall clock, completions, tokens);
    ``log_y`` a log y axis.
    """

    smoothing: float = 0.0
    x: str = STEP
    log_y: bool = False

    @classmethod
    def from_inputs(cls, smoothing: Any, x: Any, log_y: Any) -> ChartOptions:
        """Options from the page's controls; anything out of range falls back to the default."""
        try:
            weight = float(smoothing)
        except (TypeError, ValueError):
            weight = 0.0
        weight = weight if math.isfinite(weight) and 0.0 <= weight < 1.0 else 0.0
        return cls(weight, x if x in X_AXES else STEP, log_y is True)


def ema(values: Sequence[float | None], weight: float) -> list[float | None]:
    """Debiased exponential moving average, as TensorBoard's scalar smoothing (its
    ``debiasWeight``) and W&B's "exponential moving average" draw it:
    ``last = weight * last + (1 - weight) * v``, divided by ``1 - weight ** t`` over the ``t``
    finite points seen so far: the bias correction of Adam's moment estimates (Kingma & Ba
    2015, "Adam: A Method for Stochastic Optimization", ICLR, Algorithm 1 and §3), so the start
    is not pulled towards the 0 the average starts from. Missing or non-finite points stay gaps
    and do not move the average."""
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


def smoothing_window(weight: float) -> int:
    """The points an EMA of ``weight`` averages over: its span ``N = (1 + w) / (1 - w)``, the
    N of an N-point EMA whose ``1 - w = 2 / (N + 1)`` (the span of pandas' ``ewm``; its
    centre of mass is N/2 points back). 0.6 spans 4 points, 0.9 spans 19, 0.99 spans 199."""
    return max(1, round((1.0 + weight) / (1.0 - weight)))


def window_envelope(
    values: Sequence[float | None], window: int
) -> tuple[list[float | None], list[float | None]]:
    """``(lows, highs)``: the min and max of the finite values among each point's trailing
    ``window`` points (``None`` at a gap, as the EMA), in one pass with a monotonic queue of
    indices per side (Lemire 2006, "Streaming maximum-minimum filter using no more than three
    comparisons per element", Nordic J. Computing 13(4))."""
    low_q: deque[int] = deque()
    high_q: deque[int] = deque()
    lows: list[float | None] = []
    highs: list[float | None] = []
    for i, v in enumerate(values):
        finite = v is not None and math.isfinite(v)
        if finite:
            while low_q and values[low_q[-1]] >= v:
                low_q.pop()
            low_q.append(i)
            while high_q and values[high_q[-1]] <= v:
                high_q.pop()
            high_q.append(i)
        for q in (low_q, high_q):
            while q and q[0] <= i - window:
                q.popleft()
        lows.append(values[low_q[0]] if finite else None)
        highs.append(values[high_q[0]] if finite else None)
    return lows, highs


def _rgba(color: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)`` (a fill the line's colour shows through)."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def _envelope(line: dict, s: Series, keep: Sequence[int], weight: float) -> list[dict]:
    """The window's min and max as a band in the line's colour, to draw under it."""
    lows, highs = window_envelope(s.values, smoothing_window(weight))
    edge = {**line, "mode": "lines", "line": {"width": 0, "color": line["line"]["color"]}}
    quiet = {"showlegend": False, "hoverinfo": "skip"}
    name = line["meta"]["series"]
    upper = {**edge, **quiet, "y": [highs[i] for i in keep], "meta": {"series": f"{name} (max)"}}
    lower = {**edge, **quiet, "y": [lows[i] for i in keep], "meta": {"series": f"{name} (min)"}}
    lower.update(fill="tonexty", fillcolor=_rgba(line["line"]["color"], 0.12))
    return [upper, lower]


def series_lines(
    name: str,
    s: Series,
    color: str,
    width: float,
    options: ChartOptions = ChartOptions(),  # frozen: one shared default is safe
    clock: RunClock | None = None,
) -> list[dict]:
    """The traces of one series on the x axis ``options.x`` (``clock``: its run's; by default
    one timed from the series' first point): the line, or with smoothing the smoothed line over
    the raw one drawn faint, over the smoothing window's min/max band (one legend entry toggles
    them all)."""
    keep = _kept(len(s.steps))
    clock = clock or RunClock(start=s.times[0] if s.times else None)
    x = x_values(s, options.x, clock, keep)
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
    # One point still shows as one; the band and the faint line stay out of the hover.
    return [*_envelope(line, s, keep, options.smoothing), faint, smooth]
