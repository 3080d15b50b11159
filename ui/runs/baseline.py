"""A baseline run drawn under the open run's charts (no Gradio here): the runs a tracker user
compares against while a new one trains, without leaving the live view for Compare.

The baseline's series are read once when it is picked (a finished run does not move; a running
one is read again at the next pick or switch), and each panel draws the baseline's metrics of
that panel dotted in grey under the open run's lines, on the same axes.
"""

from __future__ import annotations

from collections.abc import Mapping

from storage import runs as run_store
from storage.records import metrics as metric_store
from storage.sqlite.db import Database
from ui.plots.charts import NO_POINTS, Figure, points_clock
from ui.plots.lines import ChartOptions, series_lines
from ui.plots.panels import Panel
from ui.plots.series import Series
from ui.plots.x_axes import RunClock
from ui.runs.timeline import read_clock

BASELINE_COLOR = "#9ca3af"
PAGE = 20_000
NO_BASELINE = ("no baseline", "")


def read_baseline(
    db: Database, run_id: str | None, owner: str | None
) -> tuple[str, dict, RunClock | None]:
    """``(name, series by metric, clock)`` of the viewer's run ``run_id``; ``("", {}, None)``
    for none or a run that is not theirs (as if it did not exist)."""
    run = run_store.get_run(db, run_id, owner=owner) if run_id else None
    if run is None:
        return "", {}, None
    series: dict[str, Series] = {}
    cursor = 0
    while True:
        points, cursor = metric_store.metrics_since(db, run.id, cursor, limit=PAGE)
        for p in points:
            series.setdefault(p.name, Series()).add(p.step, p.value, getattr(p, "time", None))
        if len(points) < PAGE:
            return run.name, series, read_clock(db, run, series)


def with_baseline(
    figure: Figure,
    panel: Panel,
    baseline: Mapping[str, Series],
    name: str,
    options: ChartOptions | None = None,
    clock: RunClock | None = None,
) -> Figure:
    """``figure`` with the baseline's metrics of ``panel`` drawn dotted under its own lines, on
    the figure's x axis by the baseline's own ``clock`` (by relative time each run from its own
    start, as in Compare); the figure as it was when the baseline has none of them."""
    names = panel.select(baseline)
    if not names:
        return figure
    options = options or ChartOptions()
    two_axes = "yaxis2" in figure["layout"]
    clock = clock or points_clock(baseline.values())
    under: list[dict] = []
    for metric in names:
        label = f"{metric.removeprefix('rewards/')} · baseline {name}"
        for trace in series_lines(label, baseline[metric], BASELINE_COLOR, 1.5, options, clock):
            trace["line"] = {**trace["line"], "dash": "dot"}
            if two_axes and panel.on_right(metric):
                trace["yaxis"] = "y2"
            under.append(trace)
    layout = dict(figure["layout"])
    # "No points yet" is not true any more: the baseline's are there (the other notes stay).
    notes = [a for a in layout.get("annotations", []) if a.get("text") != NO_POINTS]
    layout["annotations"] = notes
    return {"data": under + list(figure["data"]), "layout": layout}
