"""The Runs view's extra chart: any metric the run logged, picked by name, one panel each.

The fixed panels (:mod:`ui.plots.panels`) draw what most runs need; a run logs more (each TRL
metric, each component's spread, a tracker's own). The picker lists every name the run has
logged so far and follows new ones; the chart redraws when a picked series gets points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui.plots import charts
from ui.plots.plot_output import plot_value
from ui.runs.poll import RunsUpdate
from ui.runs.state import RunView
from ui.shared.named_values import Updates

MAX_EXTRA = 4  # panels in the extra chart


@dataclass
class ExtraChart:
    """The metric picker and the chart it draws (hidden while nothing is picked)."""

    metrics: gr.Dropdown
    column: gr.Column
    plot: gr.Plot

    @property
    def outputs(self) -> list[gr.components.Component]:
        return [self.metrics, self.column, self.plot]


def build_extra_chart() -> ExtraChart:
    metrics = gr.Dropdown(
        label=f"More charts: any logged metric (up to {MAX_EXTRA}, one panel each)",
        choices=[],
        value=[],
        multiselect=True,
        max_choices=MAX_EXTRA,
        elem_id="chart-extra-metrics",
    )
    with gr.Column(visible=False) as column:
        plot = gr.Plot(show_label=False, elem_id="chart-extra", elem_classes="run-chart")
    return ExtraChart(metrics=metrics, column=column, plot=plot)


def picked(view: RunView, metrics: Any) -> list[str]:
    """The picked names the run has logged, in the order picked, at most :data:`MAX_EXTRA`
    (a name from another run, or anything that is not a name, is dropped)."""
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence):
        return []
    names = [m for m in dict.fromkeys(metrics) if isinstance(m, str) and m in view.series]
    return names[:MAX_EXTRA]


def extra_figure(
    view: RunView, metrics: Any, options: charts.ChartOptions | None = None
) -> charts.Figure | None:
    """The picked metrics of the open run, one panel each on a shared x axis; ``None`` when
    nothing (of this run) is picked."""
    chosen = picked(view, metrics)
    if view.run_id is None or not chosen:
        return None
    by_metric = {m: {view.run_id: view.series[m]} for m in chosen}
    clocks = {view.run_id: view.clock} if view.clock else None
    figure = charts.metrics_figure(by_metric, {view.run_id: view.run_id}, options, clocks=clocks)
    # The CSV's run; zoomed and hovered with the panels above (the same run on the same x axis).
    link = charts.x_link(view.run_id, options or charts.ChartOptions())
    figure["layout"]["meta"].update(run=view.run_id, xlink=link)
    return figure


def draw(
    view: RunView, metrics: Any, options: charts.ChartOptions | None, x: ExtraChart
) -> Updates:
    figure = extra_figure(view, metrics, options)
    return {x.plot: plot_value(figure), x.column: gr.Column(visible=figure is not None)}


def extra_updates(
    x: ExtraChart,
    view: RunView,
    update: RunsUpdate,
    metrics: Any,
    options: charts.ChartOptions | None,
    force: bool,
) -> Updates:
    """A poll's updates of the extra chart: the picker's choices when the run's metric names
    changed, the chart when the picked series moved (or everything is drawn again)."""
    out: Updates = {}
    chosen = picked(view, metrics)
    if update.metric_names is not None:
        out[x.metrics] = gr.Dropdown(choices=update.metric_names, value=chosen)
    if force or update.metric_names is not None or set(chosen) & update.changed_metrics:
        out.update(draw(view, chosen, options, x))
    return out
