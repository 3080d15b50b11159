"""Figures of the reward lab (issue 23), as plain plotly.js JSON like :mod:`ui.plots.charts`:
a sweep over one weight (lines) or two (a heatmap), a run's reward re-scored, weight schedules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ui.plots.charts import Figure, base_layout
from ui.plots.panels import PALETTE
from ui.plots.x_axes import dotted_vline

#: What a sweep chart can show, by key: (title, y axis).
SWEEP_METRICS = {
    "zero_std_fraction": "share of zero-variance groups",
    "correctness_corr": "correlation of the total with correctness",
}


def _line(x: Sequence[float], y: Sequence[Any], name: str, i: int, **more: Any) -> dict:
    return {
        "type": "scatter",
        "mode": "lines",
        "x": list(x),
        "y": list(y),
        "name": name,
        "line": {"color": PALETTE[i % len(PALETTE)], **more.pop("line", {})},
        **more,
    }


def sweep_lines(result: Mapping[str, Any]) -> Figure:
    """One weight swept (``Sweep.to_dict()``): zero-variance share, correctness correlation,
    each component's share of the advantage mass and each probe's mean payoff, with a dotted
    vertical line where a probe starts paying."""
    axis = result["axes"][0]
    x = axis["values"]
    data = [_line(x, result["zero_std_fraction"], "zero-variance groups", 0)]
    if result.get("correctness_corr") is not None:
        data.append(_line(x, result["correctness_corr"], "corr(total, correctness)", 1))
    for k, (name, share) in enumerate(result["advantage_share"].items()):
        data.append(_line(x, share, f"advantage share: {name}", 2 + k, line={"dash": "dot"}))
    shapes, n = [], len(data)
    for r, (name, probe) in enumerate(result["probes"].items()):
        data.append(_line(x, probe["mean_delta"], f"probe payoff: {name}", n + r, yaxis="y2"))
        for point in result["onsets"].get(name, []):
            shapes.append(dotted_vline(point[0], PALETTE[(n + r) % len(PALETTE)]))
    # Two panels sharing the weight axis: shares and correlations above, probe payoffs below.
    layout = base_layout(
        f"Sweeping the weight of {axis['name']}", "share / correlation", axis["name"], 520
    )
    layout["yaxis"]["domain"] = [0.5, 1.0]
    layout["yaxis2"] = {
        **{k: v for k, v in layout["yaxis"].items() if k != "domain"},
        "title": {"text": "probe payoff (Δ total)"},
        "domain": [0.0, 0.42],
        "anchor": "x",
    }
    # The shared weight axis (and its title) under the lower panel: anchored to the upper one,
    # its title was drawn inside the lower panel.
    layout["xaxis"]["anchor"] = "y2"
    layout["shapes"] = shapes
    return {"data": data, "layout": layout}


def sweep_heatmap(result: Mapping[str, Any], metric: str) -> Figure:
    """Two weights swept: ``metric`` (a :data:`SWEEP_METRICS` key or ``probe:<name>``) as a
    heatmap over the grid, and the points where each probe starts paying as markers."""
    a, b = result["axes"]
    values, title = _metric_values(result, metric)
    n2 = len(b["values"])
    z = [values[i * n2 : (i + 1) * n2] for i in range(len(a["values"]))]  # row-major, a slowest
    data: list[dict] = [
        {
            "type": "heatmap",
            "x": b["values"],
            "y": a["values"],
            "z": z,
            "colorscale": "Viridis",
            "colorbar": {"title": {"text": title}},
        }
    ]
    for r, (name, points) in enumerate(result["onsets"].items()):
        if points:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [p[1] for p in points],
                    "y": [p[0] for p in points],
                    "name": f"{name} starts paying",
                    "marker": {"symbol": "x", "size": 8, "color": PALETTE[r % len(PALETTE)]},
                }
            )
    layout = base_layout(f"{title} over two weights", a["name"], b["name"], 380)
    return {"data": data, "layout": layout}


def _metric_values(result: Mapping[str, Any], metric: str) -> tuple[list, str]:
    if metric.startswith("probe:"):
        name = metric.removeprefix("probe:")
        return result["probes"][name]["mean_delta"], f"payoff of {name}"
    if metric.startswith("share:"):
        name = metric.removeprefix("share:")
        return result["advantage_share"][name], f"advantage share of {name}"
    values = result.get(metric)
    if values is None:
        raise KeyError(f"metric: {metric!r} is not in this sweep")
    return values, SWEEP_METRICS[metric]


def sweep_metric_choices(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, key)`` of every quantity a heatmap of ``result`` can show."""
    out = [(SWEEP_METRICS["zero_std_fraction"], "zero_std_fraction")]
    if result.get("correctness_corr") is not None:
        out.append((SWEEP_METRICS["correctness_corr"], "correctness_corr"))
    out += [(f"advantage share of {n}", f"share:{n}") for n in result["advantage_share"]]
    out += [(f"payoff of probe {n}", f"probe:{n}") for n in result["probes"]]
    return out


def rescore_figure(per_step: Sequence[Mapping[str, Any]], label: str = "new spec") -> Figure:
    """A run's stored reward and the re-scored one, mean per logged step."""
    steps = [p["step"] for p in per_step]
    data = [
        _line(steps, [p["stored_mean"] for p in per_step], "stored reward (the run's)", 0),
        _line(steps, [p["new_mean"] for p in per_step], f"re-scored: {label}", 1),
    ]
    for trace in data:
        trace["mode"] = "lines+markers"
    return {
        "data": data,
        "layout": base_layout("Reward of the run's samples, re-scored", "mean total"),
    }


def schedule_figure(curves: Mapping[str, tuple[Sequence[int], Sequence[float]]]) -> Figure:
    """Each scheduled component's weight over training steps (one small curve each)."""
    data = [_line(x, y, name, i) for i, (name, (x, y)) in enumerate(curves.items())]
    layout = base_layout("Weight schedules", "weight", "step", 220)
    layout["margin"] = {"l": 40, "r": 10, "t": 30, "b": 30}
    return {"data": data, "layout": layout}
