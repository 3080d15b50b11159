"""Plotly figures of the Runs, Compare and Preview views, as plain JSON data (no Gradio here).

Figures are built as the dicts plotly.js draws, not through ``plotly.graph_objects``: with
validation, one ``go.Figure`` of a few dozen traces takes ~0.3 s to build, too slow for a chart
redrawn every second; the dicts take well under a millisecond.

Each :class:`Panel` names the metrics it draws (exact names from
:mod:`engine.tracking.metric_names`, or prefixes such as ``rewards/`` for one line per reward
component), so the charts follow whatever the worker logs without a list of components typed here.
Each series is drawn by :mod:`ui.plots.lines` (options, thinning, smoothing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.tracking.metric_names import EVAL_ACCURACY, EVAL_SCORED
from ui.plots.intervals import interval_band
from ui.plots.lines import ChartOptions, series_lines
from ui.plots.panels import PALETTE, Panel
from ui.runs.state import Series

SINGLE_STEP_TICKS = 12  # up to this many steps, a tick on every step

Figure = dict[str, Any]  # a Plotly figure as plain JSON data: {"data": [...], "layout": {...}}


def base_layout(
    title: str, y_title: str, x_title: str = "step", height: int = 280, revision: str = "keep"
) -> dict:
    """The house layout of a figure: title, axes, white background, legend below.

    ``revision`` is Plotly's ``uirevision``: while it stays the same, the user's zoom and the
    series they hid survive a redraw (the page's ``chart_memory.js`` keeps them, since Gradio
    draws each new figure on a new element); a new one (another run, another axis) resets them.
    """
    axis = {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db", "automargin": True}
    return {
        "title": {"text": title, "font": {"size": 14}},
        "margin": {"l": 50, "r": 10, "t": 40, "b": 40},
        "height": height,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"family": "sans-serif", "size": 11},
        "legend": {"orientation": "h", "y": -0.18, "font": {"size": 10}},
        "hovermode": "x unified",  # every series at the step under the cursor
        "xaxis": {**axis, "title": {"text": x_title}} if x_title else axis,
        "yaxis": {**axis, "title": {"text": y_title}},
        "uirevision": revision,
    }


def _empty_note(text: str) -> dict:
    return {
        "text": text,
        "showarrow": False,
        "xref": "paper",
        "yref": "paper",
        "x": 0.5,
        "y": 0.5,
        "font": {"color": "#6b7280"},
    }


def step_axis(last_step: int) -> dict:
    """Whole-step ticks: one per step while there are few, else Plotly's own integer spacing."""
    axis: dict[str, Any] = {"tickformat": "d"}
    if last_step <= SINGLE_STEP_TICKS:
        axis.update(tick0=0, dtick=1)
    return axis


def _last_step(series: Iterable[Series]) -> int:
    return max((s.steps[-1] for s in series if s.steps), default=0)


def _first_time(series: Iterable[Series]) -> float | None:
    return min((s.times[0] for s in series if s.times), default=None)


def run_starts(by_metric: Mapping[str, Mapping[str, Series]]) -> dict[str, float]:
    """Each run's first point time over every metric shown: the zero of its relative time
    (W&B's "Relative Time": each run from its own start, so runs started days apart overlay)."""
    starts: dict[str, float] = {}
    for runs in by_metric.values():
        for rid, s in runs.items():
            if s.times:
                starts[rid] = min(starts.get(rid, s.times[0]), s.times[0])
    return starts


def _revision(options: ChartOptions, *keys: object) -> str:
    """What a zoom belongs to: the chart's subject and axis mode (not the smoothing: a new
    smoothing keeps the zoom)."""
    return "|".join(map(str, (*keys, options.x, options.log_y)))


def _x_meta(options: ChartOptions) -> dict:
    return {"x_name": "minutes" if options.x == "time" else "step"}


def _x_axis(options: ChartOptions, series: Iterable[Series]) -> dict:
    if options.x == "time":
        return {"title": {"text": "minutes since the first point"}}
    return step_axis(_last_step(series))


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
        **_empty_note(f"linear, not log: {', '.join(titles)} at or below 0"),
        "x": 1,
        "y": 1,
        "xanchor": "right",
        "yanchor": "bottom",
        "font": {"color": "#b45309", "size": 11},
    }


def _fit_layout(
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
    if options.x == "time":
        layout["legend"]["y"] = -0.35
        layout["margin"]["b"] = 70


def _label(name: str) -> str:
    return name.removeprefix("rewards/") if name.startswith("rewards/") else name


def _accuracy_band(line: dict, accuracy: Series, scored: Series) -> list[dict]:
    """The 95% interval around the held-out accuracy drawn as ``line``, from its n per step."""
    n_at = dict(zip(scored.steps, scored.values, strict=True))
    counts = [n_at.get(step) for step in accuracy.steps]
    if len(accuracy.steps) != len(line["x"]):  # thinned: no band rather than a wrong one
        return []
    return interval_band(line["x"], list(accuracy.values), counts, line["line"]["color"])


def same_as_earlier(names: Sequence[str], series: Mapping[str, Series]) -> dict[str, str]:
    """``{name: the earlier name whose points it repeats exactly}`` among ``names``."""
    twins: dict[str, str] = {}
    for i, name in enumerate(names):
        s = series[name]
        for earlier in names[:i]:
            e = series[earlier]
            if s.steps and (e.steps, e.values) == (s.steps, s.values) and earlier not in twins:
                twins[name] = earlier
                break
    return twins


def panel_figure(
    panel: Panel,
    series: Mapping[str, Series],
    options: ChartOptions | None = None,
    run_id: str | None = None,
) -> Figure:
    """The figure of one panel of run ``run_id``, drawn as ``options`` say; an empty panel says
    what it is waiting for."""
    names = panel.select(series)
    options = options or ChartOptions()
    t0 = _first_time(series.values())
    right = [name for name in names if panel.on_right(name)]
    two_axes = bool(right) and len(right) < len(names)
    twins = same_as_earlier(names, series)
    data: list[dict] = []
    for i, name in enumerate(names):
        label = _label(name)
        traces = series_lines(
            label, series[name], PALETTE[i % len(PALETTE)], 3 if i == 0 else 1.8, options, t0
        )
        for trace in traces:
            if two_axes and name in right:
                trace["yaxis"] = "y2"
            if name in twins:
                # Drawn exactly over its twin (mean length with nothing truncated, accuracy
                # and correctness): dashed, so both show, and the legend says they coincide.
                trace["line"] = {**trace["line"], "dash": "dash"}
                trace["name"] = f"{label} (= {_label(twins[name])})"
        if name == EVAL_ACCURACY and EVAL_SCORED in series:
            data.extend(_accuracy_band(traces[-1], series[name], series[EVAL_SCORED]))
        data.extend(traces)
    by = "by time" if options.x == "time" else "by step"
    revision = _revision(options, panel.key, run_id)
    layout = base_layout(f"{panel.title} ({by})", panel.y_title, x_title="", revision=revision)
    layout["meta"] = {**_x_meta(options), "run": run_id}  # the CSV's run column and file name
    layout["xaxis"].update(_x_axis(options, (series[n] for n in names)))
    if two_axes:
        layout["yaxis"]["title"] = {"text": _label(names[0])}
        layout["yaxis2"] = {
            "title": {"text": ", ".join(_label(n) for n in right)},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "automargin": True,
        }
    _fit_layout(layout, data, options, ("y", "y2") if two_axes else ("y",))
    if not data:
        layout["annotations"] = [_empty_note("no points yet")]
    return {"data": data, "layout": layout}


def run_colors(run_ids: Iterable[str]) -> dict[str, str]:
    """One colour per run, in the order the runs were picked (the Compare chart's lines and the
    swatch before each run's summary line)."""
    return {rid: PALETTE[i % len(PALETTE)] for i, rid in enumerate(dict.fromkeys(run_ids))}


def overlay_figure(
    metric: str,
    runs: Mapping[str, Series],
    labels: Mapping[str, str] | None = None,
    options: ChartOptions | None = None,
    height: int = 420,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """One metric of several runs on shared axes, by step or by each run's relative time
    (the Compare view)."""
    labels = labels or {}
    options = options or ChartOptions()
    t0 = run_starts({metric: runs})
    colors = {**run_colors(runs), **(colors or {})}
    data = [
        trace
        for run_id, s in runs.items()
        for trace in series_lines(
            labels.get(run_id, run_id), s, colors[run_id], 2, options, t0.get(run_id)
        )
    ]
    revision = _revision(options, metric, *runs)
    layout = base_layout(metric, _label(metric), height=height, revision=revision)
    layout["meta"] = _x_meta(options)
    layout["xaxis"].update(_x_axis(options, runs.values()))
    _fit_layout(layout, data, options)
    if not data:
        layout["annotations"] = [_empty_note("pick runs and a metric")]
    return {"data": data, "layout": layout}


def metrics_figure(
    by_metric: Mapping[str, Mapping[str, Series]],
    labels: Mapping[str, str] | None = None,
    options: ChartOptions | None = None,
    colors: Mapping[str, str] | None = None,
) -> Figure:
    """Several metrics of several runs (the Compare view): one panel per metric stacked on a
    shared step (or relative time) axis, one colour per run in every panel, one legend entry per
    run."""
    metrics = list(by_metric)
    if len(metrics) <= 1:
        metric = metrics[0] if metrics else "no metric"
        return overlay_figure(metric, by_metric.get(metric, {}), labels, options, colors=colors)
    labels = labels or {}
    options = options or ChartOptions()
    run_ids = list(dict.fromkeys(rid for runs in by_metric.values() for rid in runs))
    t0 = run_starts(by_metric)
    colors = {**run_colors(run_ids), **(colors or {})}
    k = len(metrics)
    revision = _revision(options, *metrics, *run_ids)
    layout = base_layout(
        ", ".join(_label(m) for m in metrics), "", height=260 * k, revision=revision
    )
    layout["meta"] = _x_meta(options)
    layout["annotations"] = []
    data: list[dict] = []
    gap = 0.06
    for i, metric in enumerate(metrics):
        axis = "y" if i == 0 else f"y{i + 1}"
        top = 1 - i / k
        layout["yaxis" if i == 0 else f"yaxis{i + 1}"] = {
            **layout["yaxis"],
            "title": {"text": _label(metric)},
            "domain": [top - 1 / k + gap, top],
        }
        for rid, s in by_metric[metric].items():
            for trace in series_lines(
                labels.get(rid, rid), s, colors[rid], 2, options, t0.get(rid)
            ):
                trace.update(
                    yaxis=axis,
                    legendgroup=rid,
                    showlegend=i == 0 and trace.get("showlegend", True),
                    meta={"series": f"{trace['meta']['series']} · {metric}"},
                )
                data.append(trace)
    layout["xaxis"].update(_x_axis(options, (s for r in by_metric.values() for s in r.values())))
    layout["xaxis"]["anchor"] = f"y{k}"  # the shared axis under the lowest panel
    _fit_layout(layout, data, options, ["y", *(f"y{i + 1}" for i in range(1, k))])
    return {"data": data, "layout": layout}


def contribution_figure(
    sample_labels: Sequence[str],
    contributions: Mapping[str, Sequence[float | None]],
    totals: Sequence[float | None],
) -> Figure:
    """Stacked bars of each component's weighted contribution per sample, with the total.

    Positive and negative contributions stack away from zero (``barmode="relative"``), so a bar's
    net height is the sample's total reward.
    """
    x = list(sample_labels)
    data: list[dict] = [
        {
            "type": "bar",
            "x": x,
            "y": [0.0 if v is None else v for v in values],
            "name": name,
            "marker": {"color": PALETTE[i % len(PALETTE)]},
        }
        for i, (name, values) in enumerate(contributions.items())
    ]
    data.append(
        {
            "type": "scatter",
            "x": x,
            "y": list(totals),
            "name": "total",
            "mode": "markers",
            "marker": {"color": "black", "symbol": "diamond", "size": 8},
        }
    )
    layout = base_layout(
        "Weighted contribution of each component per sample", "reward", "sample", height=320
    )
    layout["barmode"] = "relative"
    layout["xaxis"]["type"] = "category"
    return {"data": data, "layout": layout}


def to_json(figure: Figure) -> str:
    """The figure as the JSON text plotly.js draws (NaN and inf become null: gaps)."""
    return json.dumps(_clean(figure), allow_nan=False)


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj
