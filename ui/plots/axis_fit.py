"""Axes a reader can trust (no Gradio here): a log scale only where every value can be drawn
on it, a near-constant series on a range around its value, the legend clear of the x title."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ui.plots import x_axes
from ui.plots.lines import ChartOptions


def _fit_axis(layout: dict, data: list[dict], axis: str = "y") -> None:
    """A near-constant series on a range around its value: Plotly spans a flat line over
    -1..1, where a learning rate of 5e-5 reads as 0 (``axis``: a trace's ``yaxis``)."""
    values = [
        y
        for trace in data
        if trace.get("yaxis", "y") == axis
        for y in trace["y"]
        if y is not None and math.isfinite(y)
    ]
    if values:
        low, high = min(values), max(values)
        if high - low <= 1e-9 * max(abs(low), abs(high)):
            pad = abs(high) * 0.5 or 1.0
            layout[f"yaxis{axis[1:]}"]["range"] = [low - pad, high + pad]


def _above_zero(data: list[dict], axis: str) -> bool:
    """Whether every finite value drawn on ``axis`` is above 0 (a log axis can draw them all)."""
    return all(
        y > 0
        for trace in data
        if trace.get("yaxis", "y") == axis
        for y in trace["y"]
        if y is not None and math.isfinite(y)
    )


def _log_note(titles: Sequence[str]) -> dict:
    return {
        "text": f"linear, not log: {', '.join(titles)} at or below 0",
        "showarrow": False,
        "xref": "paper",
        "yref": "paper",
        "x": 1,
        "y": 1,
        "xanchor": "right",
        "yanchor": "bottom",
        "font": {"color": "#b45309", "size": 11},
    }


def fit_layout(
    layout: dict, data: list[dict], options: ChartOptions, axes: Sequence[str] = ("y",)
) -> None:
    """Axes a reader can trust: with log scale on, each of ``axes`` on a log scale where every
    value is above 0 and linear, saying so, where one is not (a log axis drops those points
    without a word: GRPO's loss went blank); each linear axis fitted to a near-constant series;
    the legend clear of the time axis's title."""
    linear = list(axes)
    if options.log_y:
        linear = [axis for axis in axes if not _above_zero(data, axis)]
        for axis in axes:
            layout[f"yaxis{axis[1:]}"]["type"] = "linear" if axis in linear else "log"
        titles = [layout[f"yaxis{a[1:]}"].get("title", {}).get("text") or a for a in linear]
        if linear and data:
            layout.setdefault("annotations", []).append(_log_note(titles))
    for axis in linear:
        _fit_axis(layout, data, axis)
    if options.x != x_axes.STEP:  # the axis's title takes the room under the plot
        layout["legend"]["y"] = -0.35
        layout["margin"]["b"] = 70
