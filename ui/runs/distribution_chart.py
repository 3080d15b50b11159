"""The Runs view's distribution chart: a heat map over steps of one quantity of each step's whole
generation batch (total reward, advantage, length, length of right vs wrong answers), picked
by name; drawn by :mod:`ui.plots.distributions` from what the poll read
(:attr:`ui.runs.state.RunView.distributions`)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ui.plots.distributions import DEFAULT_QUANTITY, QUANTITIES, distribution_figure
from ui.plots.plot_output import plot_value
from ui.runs.poll import RunsUpdate
from ui.runs.state import RunView
from ui.shared.named_values import Updates, Values

EMPTY_NOTE = (
    "<small>No distributions for this run yet. Runs record them with their samples "
    "(`training.samples_per_log` above 0), every completion of each logged step; runs from "
    "before this version have none.</small>"
)
NOTE = (
    "<small>Each column is one logged step's whole batch (every completion, not only the "
    "samples below); the line is its median. A reward in two bands means groups all right or "
    "all wrong; wrong answers growing longer than right ones is length hacking.</small>"
)


@dataclass
class DistributionChart:
    """The quantity picker, the chart (hidden while it has nothing) and the line under it."""

    quantity: gr.Radio
    column: gr.Column
    plot: gr.Plot
    note: gr.Markdown

    @property
    def outputs(self) -> list[gr.components.Component]:
        return [self.column, self.plot, self.note]


def build_distribution_chart() -> DistributionChart:
    quantity = gr.Radio(
        list(QUANTITIES),
        value=DEFAULT_QUANTITY,
        label="Distribution over each step's whole batch",
        elem_id="dist-quantity",
    )
    with gr.Column(visible=False) as column:
        plot = gr.Plot(show_label=False, elem_id="chart-dist", elem_classes="run-chart")
    note = gr.Markdown(EMPTY_NOTE, elem_id="dist-note")
    return DistributionChart(quantity=quantity, column=column, plot=plot, note=note)


def draw(view: RunView, quantity: object, x: DistributionChart) -> Updates:
    """The chart of ``quantity`` for the open run (an unknown pick draws the default)."""
    picked = quantity if isinstance(quantity, str) and quantity in QUANTITIES else DEFAULT_QUANTITY
    figure = distribution_figure(view.distributions, picked, view.run_id)
    return {
        x.plot: plot_value(figure),
        x.column: gr.Column(visible=figure is not None),
        x.note: NOTE if figure is not None else EMPTY_NOTE,
    }


def distribution_updates(
    x: DistributionChart, view: RunView, update: RunsUpdate, quantity: object, force: bool
) -> Updates:
    """A poll's updates of the chart: drawn again when the picked quantity got a step, or when
    everything is drawn again (another run)."""
    picked = QUANTITIES.get(quantity if isinstance(quantity, str) else "")
    names = set(picked.names if picked else QUANTITIES[DEFAULT_QUANTITY].names)
    if force or names & update.changed_distributions:
        return draw(view, quantity, x)
    return {}


def wire_distribution_chart(x: DistributionChart, view: gr.State) -> None:
    """A quantity picked by the user draws only this chart, from what the view holds."""

    def on_pick(raw: Values) -> Updates:
        state: RunView = raw[view]
        with state.lock:
            return draw(state, raw[x.quantity], x)

    x.quantity.input(
        on_pick,
        inputs={view, x.quantity},
        outputs=x.outputs,
        show_progress="hidden",
        api_visibility="private",
        trigger_mode="always_last",
    )
