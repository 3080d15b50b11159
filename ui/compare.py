"""The Compare tab: overlay any runs on any metric, and diff their configs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from storage import metrics as metric_store
from storage import runs as run_store
from storage.db import Database
from ui import charts
from ui.context import AppContext
from ui.identity import viewer_for
from ui.plots import plot_value
from ui.run_poll import run_choices
from ui.run_state import Series

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


def compare(db: Database, run_ids: Sequence[str], metric: str | None, *, owner: str | None = None):
    """The overlay figure, the metric choices and the config diff for the chosen runs (of
    ``owner`` when given: other users' runs are left out as if they did not exist)."""
    if isinstance(run_ids, str):
        run_ids = [run_ids]
    wanted = [r for r in run_ids or [] if r and isinstance(r, str)]
    runs = {rid: run_store.get_run(db, rid, owner=owner) for rid in wanted}
    runs = {rid: r for rid, r in runs.items() if r is not None}
    names = union_metric_names(db, list(runs))
    if metric not in names:
        metric = DEFAULT_METRIC if DEFAULT_METRIC in names else (names[0] if names else None)
    series: dict[str, Series] = {}
    if metric:
        for rid, s in metric_store.metric_series(db, list(runs), metric).items():
            series[rid] = Series(list(s.steps), list(s.values))
    labels = {rid: r.name for rid, r in runs.items()}
    figure = charts.overlay_figure(metric or "no metric", series, labels)
    headers, rows = config_diff({rid: r.config for rid, r in runs.items()})
    return figure, names, metric, headers, rows


@dataclass
class CompareHandles:
    """The run picker, filled with the run list when a page loads (see :mod:`ui.app`)."""

    runs_box: gr.Dropdown


def build_compare(ctx: AppContext, tab: gr.Tab | None = None) -> CompareHandles:
    """The Compare tab; ``tab`` (its ``gr.Tab``) refreshes the run picker whenever it is opened,
    so runs started after the page loaded are there to pick."""
    with gr.Row():
        runs_box = gr.Dropdown(
            label="Runs", choices=[], multiselect=True, elem_id="compare-runs", scale=3
        )
        metric_box = gr.Dropdown(label="Metric", choices=[], elem_id="compare-metric", scale=2)
        refresh = gr.Button("Refresh", size="sm", scale=0)
    gr.Markdown(
        "<small>The run list is read when this tab opens; Refresh reads it again.</small>",
        elem_id="compare-hint",
    )
    plot = gr.Plot(show_label=False, elem_id="compare-chart")
    gr.Markdown("#### Config fields that differ")
    diff = gr.Dataframe(
        headers=["field"], value=[], interactive=False, wrap=True, elem_id="compare-diff"
    )

    def update(run_ids, metric, request: gr.Request, profile: gr.OAuthProfile | None = None):
        owner = viewer_for(request, profile).scope
        figure, names, metric, headers, rows = compare(ctx.db, run_ids, metric, owner=owner)
        return (
            plot_value(figure),
            gr.Dropdown(choices=names, value=metric),
            gr.Dataframe(value=rows, headers=headers),
        )

    def refresh_runs(selected, request: gr.Request, profile: gr.OAuthProfile | None = None):
        runs = run_store.list_runs(ctx.db, owner=viewer_for(request, profile).scope)
        ids = {r.id for r in runs}
        keep = [r for r in selected or [] if r in ids]
        return gr.Dropdown(choices=run_choices(runs), value=keep)

    for trigger in (runs_box.change, metric_box.input):
        trigger(
            update,
            inputs=[runs_box, metric_box],
            outputs=[plot, metric_box, diff],
            api_visibility="private",
        )
    refresh.click(refresh_runs, inputs=runs_box, outputs=runs_box, api_visibility="private").then(
        update,
        inputs=[runs_box, metric_box],
        outputs=[plot, metric_box, diff],
        api_visibility="private",
    )
    if tab is not None:
        tab.select(refresh_runs, inputs=runs_box, outputs=runs_box, api_visibility="private")
    return CompareHandles(runs_box=runs_box)
