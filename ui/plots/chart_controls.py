"""Chart controls shared by the Runs and Compare tabs (one definition, the same choices)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ui.plots import x_axes

#: (label, value) of the x-axis choices; the values are what ``charts.ChartOptions.x`` takes.
X_AXIS_CHOICES = x_axes.CHOICES


def x_axis_radio(elem_id: str, scale: int | None = None) -> gr.Radio:
    """The "x axis" switch: by step, relative time (each run from its own start), wall clock,
    completions trained on or tokens seen (:mod:`ui.plots.x_axes`)."""
    return gr.Radio(X_AXIS_CHOICES, value="step", label="x axis", elem_id=elem_id, scale=scale)


def smoothing_slider(elem_id: str, scale: int | None = None) -> gr.Slider:
    """The EMA smoothing weight (0: raw lines only), as TensorBoard and W&B offer it."""
    return gr.Slider(
        0.0,
        0.99,
        value=0.0,
        step=0.01,
        label="Smoothing (EMA; the raw line stays faint behind)",
        elem_id=elem_id,
        scale=scale,
    )


@dataclass(frozen=True)
class ChartControls:
    """A tab's chart settings: what ``charts.ChartOptions.from_inputs`` reads."""

    smoothing: gr.Slider
    x_axis: gr.Radio
    log_y: gr.Checkbox

    @property
    def all(self) -> list[gr.components.Component]:
        return [self.smoothing, self.x_axis, self.log_y]
