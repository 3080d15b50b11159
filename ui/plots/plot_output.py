"""Handing :mod:`ui.plots.charts` figures (plain plotly.js JSON) to ``gr.Plot``."""

from __future__ import annotations

from gradio.components.plot import PlotData

from ui.plots.charts import Figure, to_json


def plot_value(figure: Figure | None) -> PlotData | None:
    """What a ``gr.Plot`` output takes: the figure's JSON tagged as a plotly chart."""
    return None if figure is None else PlotData(type="plotly", plot=to_json(figure))
