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
from ui.plots import x_axes
from ui.plots.axis_fit import fit_layout
from ui.plots.intervals import interval_band
from ui.plots.lines import ChartOptions, series_lines
from ui.plots.panels import PALETTE, Panel
from ui.plots.series import Series
from ui.plots.x_axes import RunClock

NO_POINTS = "no points yet"  # what an empty panel says
SINGLE_STEP_TICKS = 12  # up to this many steps, a tick on every step

Figure = dict[str, Any]  # a Plotly figure as plain JSON data: {"data": [...], "layout": {...}}
# A panel's title says its x axis: "Loss (by step)".
_BY = {"step": "step", "time": "relative time", "wall": "wall clock"}
_BY.update(completions="completions", tokens="tokens seen")


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


def points_clock(series: Iterable[Series]) -> RunClock:
    """A clock timed from the first point of ``series``: for a run whose phase rows were not
    read (its relative time then says "since the first point")."""
    return RunClock(start=min((s.times[0] for s in series if s.times), default=None))


def _revision(options: ChartOptions, *keys: object) -> str:
    """What a zoom belongs to: the chart's subject and axis mode (not the smoothing: a new
    smoothing keeps the zoom)."""
    return "|".join(map(str, (*keys, options.x, options.log_y)))


def x_link(run_id: str | None, options: ChartOptions) -> str:
    """The link of the Runs view's charts of ``run_id`` on this x axis: the page zooms and
    hovers the charts of one link as one (``ui/plots/chart_links.js``)."""
    return f"{run_id}|{options.x}"


def _x_meta(options: ChartOptions) -> dict:
    return {"x_name": x_axes.X_NAMES[options.x]}


# A vertical line through the plot at the x under the cursor: with chart_links.js, at the same x
# on every panel of the run (W&B's synced crosshair).
CROSSHAIR = {
    "showspikes": True,
    "spikemode": "across",
    "spikesnap": "hovered data",
    "spikethickness": 1,
    "spikedash": "solid",
    "spikecolor": "#9ca3af",
}


def _x_axis(options: ChartOptions, series: Iterable[Series], clocks: Iterable[RunClock]) -> dict:
    if options.x == x_axes.STEP:
        return {**CROSSHAIR, **step_axis(_last_step(series))}
    return {**CROSSHAIR, **x_axes.axis_layout(options.x, clocks)}


def _mark_gaps(layout: dict, options: ChartOptions, clocks: Mapping[str, tuple[RunClock, str]]):
    """Each run's stop/resume gaps on the x axis (``clocks``: run -> its clock and colour)."""
    for clock, color in clocks.values():
        shapes, notes = x_axes.gap_marks(clock, options.x, color)
        if shapes:
            layout.setdefault("shapes", []).extend(shapes)
            layout.setdefault("annotations", []).extend(notes)


def _say_if_unplaced(layout: dict, data: list[dict], options: ChartOptions) -> None:
    """A chart whose points all lack an x on this axis says why, instead of drawing nothing."""
    if all(x is None for trace in data for x in trace["x"]):
        layout.setdefault("annotations", []).append(_empty_note(x_axes.UNPLACED[options.x]))


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
    clock: RunClock | None = None,
) -> Figure:
    """The figure of one panel of run ``run_id`` (``clock``: its x axes' clock; by default one
    from its first point), drawn as ``options`` say; an empty panel says what it is waiting
    for."""
    names = panel.select(series)
    options = options or ChartOptions()
    clock = clock or points_clock(series.values())
    right = [name for name in names if panel.on_right(name)]
    two_axes = bool(right) and len(right) < len(names)
    twins = same_as_earlier(names, series)
    data: list[dict] = []
    for i, name in enumerate(names):
        label = _label(name)
        traces = series_lines(
            label, series[name], PALETTE[i % len(PALETTE)], 3 if i == 0 else 1.8, options, clock
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
    revision = _revision(options, panel.key, run_id)
    title = f"{panel.title} (by {_BY[options.x]})"
    layout = base_layout(title, panel.y_title, x_title="", revision=revision)
    # The CSV's run column and file name, and the charts zoomed and hovered with this one.
    layout["meta"] = {**_x_meta(options), "run": run_id, "xlink": x_link(run_id, options)}
    layout["xaxis"].update(_x_axis(options, (series[n] for n in names), [clock]))
    if two_axes:
        layout["yaxis"]["title"] = {"text": _label(names[0])}
        layout["yaxis2"] = {
            "title": {"text": ", ".join(_label(n) for n in right)},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "automargin": True,
        }
    fit_layout(layout, data, options, ("y", "y2") if two_axes else ("y",))
    if not data:
        layout["annotations"] = [_empty_note(NO_POINTS)]
    else:
        _mark_gaps(layout, options, {run_id or "": (clock, x_axes.GAP_LINE)})
        _say_if_unplaced(layout, data, options)
    return {"data": data, "layout": layout}


def run_clocks(
    by_metric: Mapping[str, Mapping[str, Series]], clocks: Mapping[str, RunClock] | None = None
) -> dict[str, RunClock]:
    """Each run's clock: the one given, else one from its first point over every metric shown
    (W&B's "Relative Time": each run from its own start, so runs started days apart overlay)."""
    run_ids = dict.fromkeys(rid for runs in by_metric.values() for rid in runs)
    given = clocks or {}
    return {
        rid: given.get(rid) or points_clock(r[rid] for r in by_metric.values() if rid in r)
        for rid in run_ids
    }


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
    clocks: Mapping[str, RunClock] | None = None,
) -> Figure:
    """One metric of several runs on shared axes, by step or by any x axis of
    :mod:`ui.plots.x_axes` (each run's time from its own start; ``clocks``: each run's clock),
    with each run's stop/resume gaps in its colour (the Compare view)."""
    labels = labels or {}
    options = options or ChartOptions()
    clocks = run_clocks({metric: runs}, clocks)
    colors = {**run_colors(runs), **(colors or {})}
    data = [
        trace
        for run_id, s in runs.items()
        for trace in series_lines(
            labels.get(run_id, run_id), s, colors[run_id], 2, options, clocks[run_id]
        )
    ]
    revision = _revision(options, metric, *runs)
    layout = base_layout(metric, _label(metric), height=height, revision=revision)
    layout["meta"] = _x_meta(options)
    layout["xaxis"].update(_x_axis(options, runs.values(), clocks.values()))
    fit_layout(layout, data, options)
    if not data:
        layout["annotations"] = [_empty_note("pick runs and a metric")]
    else:
        _mark_gaps(layout, options, {rid: (c, colors[rid]) for rid, c in clocks.items()})
        _say_if_unplaced(layout, data, options)
    return {"data": data, "layout": layout}


def metrics_figure(
    by_metric: Mapping[str, Mapping[str, Series]],
    labels: Mapping[str, str] | None = None,
    options: ChartOptions | None = None,
    colors: Mapping[str, str] | None = None,
    clocks: Mapping[str, RunClock] | None = None,
) -> Figure:
    """Several metrics of several runs (the Compare view, the Runs view's extra chart): one
    panel per metric stacked on a shared x axis, one colour per run in every panel, one legend
    entry per run."""
    metrics = list(by_metric)
    if len(metrics) <= 1:
        metric = metrics[0] if metrics else "no metric"
        runs = by_metric.get(metric, {})
        return overlay_figure(metric, runs, labels, options, colors=colors, clocks=clocks)
    labels = labels or {}
    options = options or ChartOptions()
    run_ids = list(dict.fromkeys(rid for runs in by_metric.values() for rid in runs))
    clocks = run_clocks(by_metric, clocks)
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
                labels.get(rid, rid), s, colors[rid], 2, options, clocks[rid]
            ):
                trace.update(
                    yaxis=axis,
                    legendgroup=rid,
                    showlegend=i == 0 and trace.get("showlegend", True),
                    meta={"series": f"{trace['meta']['series']} · {metric}"},
                )
                data.append(trace)
    every = (s for r in by_metric.values() for s in r.values())
    layout["xaxis"].update(_x_axis(options, every, clocks.values()))
    layout["xaxis"]["anchor"] = f"y{k}"  # the shared axis under the lowest panel
    fit_layout(layout, data, options, ["y", *(f"y{i + 1}" for i in range(1, k))])
    _mark_gaps(layout, options, {rid: (c, colors[rid]) for rid, c in clocks.items()})
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
