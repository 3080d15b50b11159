"""Heat maps of per-step distributions (no Gradio): x the step, y the value in bins, colour the
completions of that step's whole batch in each bin; W&B's and trackio's histogram panels drawn
over steps, with each step's median on top.

"Length: right vs wrong" draws the lengths of right and of wrong answers as two heat maps over
one step axis, each with both medians: wrong answers growing longer while right ones do not is
the length-hacking signal (:mod:`engine.tracking.distributions`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.tracking import metric_names as m
from ui.plots.charts import Figure, base_layout, step_axis
from ui.plots.distribution_series import DistributionHistory, StepValues

BINS = 24  # rows of a heat map: enough to see two modes, few enough to read a count
# Light to dark: more completions read darker on the white page (Plotly's "Blues" runs the
# other way); an empty cell is not drawn at all.
COLORSCALE = [[0.0, "#dbeafe"], [0.5, "#3b82f6"], [1.0, "#1e3a8a"]]


@dataclass(frozen=True)
class Quantity:
    """What one pick of the distribution chart draws: a heat map per name, sharing the y bins."""

    label: str
    names: tuple[str, ...]
    y_title: str
    panel_titles: tuple[str, ...] = ()  # one per name when there are several


QUANTITIES: dict[str, Quantity] = {
    q.label: q
    for q in (
        Quantity("total reward", (m.DIST_REWARD,), "reward"),
        Quantity("advantage", (m.DIST_ADVANTAGE,), "advantage"),
        Quantity("length", (m.DIST_LENGTH,), "tokens"),
        Quantity(
            "length: right vs wrong",
            (m.DIST_LENGTH_CORRECT, m.DIST_LENGTH_WRONG),
            "tokens",
            ("right answers", "wrong answers"),
        ),
    )
}
DEFAULT_QUANTITY = "total reward"
# The medians of the split, in the colours the rest of the page gives right and wrong.
MEDIAN_COLORS = {m.DIST_LENGTH_CORRECT: "#16a34a", m.DIST_LENGTH_WRONG: "#dc2626"}
MEDIAN_NAMES = {m.DIST_LENGTH_CORRECT: "median, right", m.DIST_LENGTH_WRONG: "median, wrong"}


@dataclass(frozen=True)
class Bins:
    """``count`` equal bins of ``width`` from ``start``; whole numbers (token counts) get bins
    of whole widths centred on them."""

    start: float
    width: float
    count: int

    def index(self, value: float) -> int:
        return min(self.count - 1, max(0, int((value - self.start) // self.width)))

    @property
    def centers(self) -> list[float]:
        return [self.start + (i + 0.5) * self.width for i in range(self.count)]


def bins_for(values: Sequence[float]) -> Bins:
    """At most :data:`BINS` bins spanning ``values`` (non-empty)."""
    lo, hi = min(values), max(values)
    if all(float(v).is_integer() for v in values):
        width = max(1, math.ceil((hi - lo + 1) / BINS))
        return Bins(lo - 0.5, float(width), math.ceil((hi - lo + 1) / width))
    if hi - lo <= 1e-12 * max(1.0, abs(lo)):
        pad = abs(lo) * 0.05 or 0.05
        return Bins(lo - pad, 2 * pad, 1)
    return Bins(lo, (hi - lo) / BINS, BINS)


def counts(series: StepValues, bins: Bins) -> list[list[float | None]]:
    """``z[bin][step]``: the completions of each step in each bin (each kept value stands for
    ``count / len(values)`` of them); ``None`` for an empty cell, drawn as the background."""
    z: list[list[float | None]] = [[None] * len(series) for _ in range(bins.count)]
    for j, (count, values) in enumerate(zip(series.counts, series.values, strict=True)):
        weight = count / len(values)
        for v in values:
            i = bins.index(v)
            z[i][j] = round((z[i][j] or 0.0) + weight, 1)
    return z


def median(values: Sequence[float]) -> float:
    """The median of sorted ``values`` (non-empty)."""
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _median_line(name: str, series: StepValues, yaxis: str, shown: bool, own: bool) -> dict:
    """The median by step of ``name``'s values on ``yaxis``; dashed on another name's panel."""
    line = {"color": MEDIAN_COLORS.get(name, "#dc2626"), "width": 1.5}
    return {
        "type": "scatter",
        "mode": "lines",
        "x": list(series.steps),
        "y": [median(v) for v in series.values],
        "name": MEDIAN_NAMES.get(name, "median"),
        # The CSV download's series, once per name (the cells are not in it: the run's data
        # download holds every value).
        "meta": {"series": f"{name} median"} if own else {},
        "legendgroup": name,
        "showlegend": shown,
        "yaxis": yaxis,
        "line": line if own else {**line, "dash": "dot"},
        "hovertemplate": "step %{x}: median %{y:.4g}<extra></extra>",
    }


def distribution_figure(
    history: DistributionHistory, quantity: str, run_id: str | None = None
) -> Figure | None:
    """The heat map(s) of ``quantity`` (a key of :data:`QUANTITIES`) for the run whose
    distributions ``history`` holds; ``None`` when it has none of them."""
    q = QUANTITIES.get(quantity, QUANTITIES[DEFAULT_QUANTITY])
    present = {n: history.by_name[n] for n in q.names if history.by_name.get(n)}
    if not present:
        return None
    bins = bins_for([v for s in present.values() for values in s.values for v in values])
    last = max(s.steps[-1] for s in present.values())
    title = f"{q.label.capitalize()} over each step's whole batch (colour: completions)"
    layout = base_layout(title, q.y_title, revision=f"dist|{run_id}|{q.label}", height=320)
    layout["hovermode"] = "closest"
    layout["meta"] = {"x_name": "step", "run": run_id}  # the CSV's run column and file name
    layout["xaxis"].update(step_axis(last))
    layout["coloraxis"] = {
        "colorscale": COLORSCALE,
        "cmin": 0,
        "colorbar": {"title": {"text": "completions"}, "thickness": 10},
    }
    half = bins.width / 2
    data: list[dict] = []
    split = len(q.names) > 1
    for k, name in enumerate(q.names):
        yaxis = "y" if k == 0 else f"y{k + 1}"
        series = present.get(name)
        if series is not None:
            label = q.panel_titles[k] if split else q.y_title
            data.append(
                {
                    "type": "heatmap",
                    "x": list(series.steps),
                    "y": bins.centers,
                    "z": counts(series, bins),
                    "coloraxis": "coloraxis",
                    "yaxis": yaxis,
                    "name": label,
                    "hovertemplate": (
                        f"step %{{x}}<br>{label}: %{{y:.4g}} ± {half:.3g}<br>"
                        "%{z} completions<extra></extra>"
                    ),
                }
            )
        for other, line in present.items():  # both medians on each panel of the split
            if split or other == name:
                data.append(_median_line(other, line, yaxis, k == 0, other == name))
    if split:
        _split_axes(layout, q, bins)
    return {"data": data, "layout": layout}


def _split_axes(layout: dict, q: Quantity, bins: Bins) -> None:
    """One panel per name, stacked, on the same bins and step axis (under the lowest panel)."""
    span = [bins.start, bins.start + bins.count * bins.width]
    layout["xaxis"]["anchor"] = f"y{len(q.names)}"
    layout["height"] = 460
    gap = 0.12
    share = (1 - gap * (len(q.names) - 1)) / len(q.names)
    for k, title in enumerate(q.panel_titles):
        top = 1 - k * (share + gap)
        axis = {**layout["yaxis"], "domain": [top - share, top], "range": span}
        axis["title"] = {"text": f"{title} ({q.y_title})"}
        if k:
            axis["anchor"] = "x"
        layout["yaxis" if k == 0 else f"yaxis{k + 1}"] = axis
