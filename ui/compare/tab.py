"""The Compare tab: overlay any runs on several metrics at once, summarise each run in one
line, and diff their configs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.tracking import metric_names
from storage import labels as label_store
from storage import runs as run_store
from storage.records import metrics as metric_store
from storage.runs import RunInfo
from storage.sqlite.db import Database
from ui.access.identity import viewer_for
from ui.plots import chart_controls, charts, x_axes
from ui.plots.chart_controls import ChartControls
from ui.plots.plot_output import plot_value
from ui.plots.series import Series
from ui.plots.x_axes import RunClock
from ui.runs import progress as run_progress
from ui.runs.poll import run_choices
from ui.runs.timeline import read_clock
from ui.shared.context import AppContext
from ui.shared.messages import escape

DEFAULT_METRIC = "reward/total"


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"training.steps": 3, "reward.components[0].weight": 1.0, ...}``."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, path))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                out.update(flatten(item, f"{path}[{i}]"))
        else:
            out[path] = value
    return out


def config_diff(configs: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows of the config fields whose values differ between the runs."""
    flat = {rid: flatten(cfg) for rid, cfg in configs.items()}
    keys = sorted({k for f in flat.values() for k in f})
    missing = object()
    rows = []
    for key in keys:
        values = [f.get(key, missing) for f in flat.values()]
        if len({repr(v) for v in values}) > 1:
            rows.append([key, *["" if v is missing else str(v) for v in values]])
    return ["field", *flat.keys()], rows


def union_metric_names(db: Database, run_ids: Sequence[str]) -> list[str]:
    names: set[str] = set()
    for rid in run_ids:
        names.update(metric_store.metric_names(db, rid))
    return sorted(names)


MAX_METRICS = 6  # panels in one comparison


def _series(db: Database, run_ids: list[str], metric: str) -> dict[str, Series]:
    return {
        rid: Series(list(s.steps), list(s.values), list(s.times))
        for rid, s in metric_store.metric_series(db, run_ids, metric).items()
    }


def _clocks(
    db: Database,
    runs: Mapping[str, RunInfo],
    by_metric: Mapping[str, Mapping[str, Series]],
    options: charts.ChartOptions | None,
) -> dict[str, RunClock]:
    """Each run's clock for the x axis picked (the token count is read only to draw by it)."""
    by_tokens = options is not None and options.x == x_axes.TOKENS
    tokens = _series(db, list(runs), metric_names.NUM_TOKENS) if by_tokens else {}
    clocks = {}
    for rid, run in runs.items():
        series = {m: s[rid] for m, s in by_metric.items() if rid in s}
        if rid in tokens:
            series[metric_names.NUM_TOKENS] = tokens[rid]
        clocks[rid] = read_clock(db, run, series)
    return clocks


@dataclass
class Comparison:
    """Everything the Compare tab shows for the chosen runs, read in one pass."""

    figure: charts.Figure
    names: list[str]  # every metric the runs have (the metric choices)
    chosen: list[str]  # the metrics drawn
    headers: list[str]  # of the config diff
    rows: list[list[Any]]
    summary: str  # one Markdown line per run


def read_runs(
    db: Database, run_ids: Sequence[str] | str | None, owner: str | None = None
) -> list[RunInfo]:
    """The runs among ``run_ids`` that exist (and are ``owner``'s when given: other users' runs
    are left out as if they did not exist), each read once."""
    if isinstance(run_ids, str):
        run_ids = [run_ids]
    wanted = dict.fromkeys(r for r in run_ids or [] if r and isinstance(r, str))
    runs = (run_store.get_run(db, rid, owner=owner) for rid in wanted)
    return [r for r in runs if r is not None]


def summary_markdown(
    db: Database, runs: Sequence[RunInfo], colors: Mapping[str, str] | None = None
) -> str:
    """One line per run (Markdown): the run's colour in the chart, held-out accuracy before ->
    after (best), steps, duration, then the user's tags and note (escaped: their own text, shown
    as typed)."""
    colors = colors or {}
    accuracy = _series(db, [r.id for r in runs], metric_names.EVAL_ACCURACY)
    labels = label_store.labels_of(db, [r.id for r in runs])
    lines = []
    for r in runs:
        swatch = f'<span style="color:{colors[r.id]}">●</span> ' if r.id in colors else ""
        line = f"- {swatch}**{escape(r.name)}**: "
        line += escape(run_progress.summary_line(r, accuracy.get(r.id)))
        label = labels.get(r.id)
        if label is not None and label.tags:
            line += " · tags: " + ", ".join(f"*{escape(t)}*" for t in label.tags)
        if label is not None and label.note:  # one line under the run's, however it was typed
            line += f"<br>note: {escape(' '.join(label.note.split()))}"
        lines.append(line)
    return "\n".join(lines)


def comparison(
    db: Database,
    run_ids: Sequence[str] | str | None,
    metrics: Sequence[str] | str | None,
    *,
    owner: str | None = None,
    options: charts.ChartOptions | None = None,
) -> Comparison:
    """The chosen metrics (one panel each; the default metric when none of them is there), the
    config diff and the one-line summaries of the chosen runs, each run read once."""
    if isinstance(metrics, str):
        metrics = [metrics]
    runs = {r.id: r for r in read_runs(db, run_ids, owner)}
    names = union_metric_names(db, list(runs))
    chosen = [m for m in dict.fromkeys(metrics or []) if m in names][:MAX_METRICS]
    if not chosen:
        default = DEFAULT_METRIC if DEFAULT_METRIC in names else (names[0] if names else None)
        chosen = [default] if default else []
    by_metric = {metric: _series(db, list(runs), metric) for metric in chosen}
    labels = {rid: r.name for rid, r in runs.items()}
    colors = charts.run_colors(runs)  # by pick order: a run keeps its colour in every panel
    clocks = _clocks(db, runs, by_metric, options)
    figure = charts.metrics_figure(by_metric, labels, options, colors, clocks)
    headers, rows = config_diff({rid: r.config for rid, r in runs.items()})
    summary = summary_markdown(db, list(runs.values()), colors)
    return Comparison(figure, names, chosen, headers, rows, summary)


MAX_LINKED_RUNS = 20  # runs a ?compare= address may pick


def linked_runs(choices: Sequence[tuple[str, str]], asked: str | None) -> list[str]:
    """The runs a ``?compare=ID,ID`` address picks, among the viewer's ``(label, id)`` choices
    (an id that is not theirs is left out, as if it did not exist), in the order asked."""
    ids = {run_id for _, run_id in choices}
    wanted = (asked or "").split(",")[: MAX_LINKED_RUNS * 2]
    return [r for r in dict.fromkeys(w.strip() for w in wanted) if r in ids][:MAX_LINKED_RUNS]


# The user's picks go into the address (ui.memory.wiring), kept on reload and back/forward.
URL_JS = "(ids) => { window.studioCompareInUrl?.(ids); }"


@dataclass
class CompareHandles:
    """The run picker, filled with the run list when a page loads (see :mod:`ui.factory`)."""

    runs_box: gr.Dropdown
    chart_controls: ChartControls  # smoothing, x axis, log scale (kept by the browser)


def build_compare(ctx: AppContext, tab: gr.Tab | None = None) -> CompareHandles:
    """The Compare tab; ``tab`` (its ``gr.Tab``) refreshes the run picker whenever it is opened,
    so runs started after the page loaded are there to pick."""
    with gr.Row():
        runs_box = gr.Dropdown(
            label="Runs", choices=[], multiselect=True, elem_id="compare-runs", scale=3
        )
        metric_box = gr.Dropdown(
            label=f"Metrics (up to {MAX_METRICS}, one panel each)",
            choices=[],
            multiselect=True,
            max_choices=MAX_METRICS,
            elem_id="compare-metric",
            scale=2,
        )
        refresh = gr.Button("Refresh", size="sm", scale=0)
    with gr.Row(equal_height=True):
        smoothing = chart_controls.smoothing_slider("compare-smoothing", scale=3)
        x_axis = chart_controls.x_axis_radio("compare-x", scale=2)
        log_y = gr.Checkbox(label="log scale", value=False, elem_id="compare-log", scale=1)
    gr.Markdown(
        "<small>The run list is read when this tab opens; Refresh reads it again.</small>",
        elem_id="compare-hint",
    )
    summary = gr.Markdown(elem_id="compare-summary")
    plot = gr.Plot(show_label=False, elem_id="compare-chart")
    gr.Markdown("#### Config fields that differ")
    diff = gr.Dataframe(
        headers=["field"], value=[], interactive=False, wrap=True, elem_id="compare-diff"
    )

    def update(
        run_ids,
        metrics,
        smooth,
        x,
        log,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        owner = viewer_for(request, profile).scope
        options = charts.ChartOptions.from_inputs(smooth, x, log)
        c = comparison(ctx.db, run_ids, metrics, owner=owner, options=options)
        return (
            plot_value(c.figure),
            gr.Dropdown(choices=c.names, value=c.chosen),
            gr.Dataframe(value=c.rows, headers=c.headers),
            c.summary,
        )

    def refresh_runs(selected, request: gr.Request, profile: gr.OAuthProfile | None = None):
        runs = run_store.list_runs(ctx.db, owner=viewer_for(request, profile).scope)
        ids = {r.id for r in runs}
        keep = [r for r in selected or [] if r in ids]
        return gr.Dropdown(choices=run_choices(runs), value=keep)

    runs_box.input(None, inputs=runs_box, js=URL_JS, api_visibility="private")
    inputs = [runs_box, metric_box, smoothing, x_axis, log_y]
    for trigger in (runs_box.change, metric_box.input, x_axis.change, log_y.change):
        trigger(
            update,
            inputs=inputs,
            outputs=[plot, metric_box, diff, summary],
            api_visibility="private",
        )
    smoothing.change(  # a dragged slider redraws for where it stops
        update,
        inputs=inputs,
        outputs=[plot, metric_box, diff, summary],
        api_visibility="private",
        trigger_mode="always_last",
        show_progress="hidden",
    )
    refresh.click(refresh_runs, inputs=runs_box, outputs=runs_box, api_visibility="private").then(
        update,
        inputs=inputs,
        outputs=[plot, metric_box, diff, summary],
        api_visibility="private",
    )
    if tab is not None:
        tab.select(refresh_runs, inputs=runs_box, outputs=runs_box, api_visibility="private")
    return CompareHandles(runs_box=runs_box, chart_controls=ChartControls(smoothing, x_axis, log_y))
