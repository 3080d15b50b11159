"""Plotly figures of the Runs, Compare and Preview views, as plain JSON data (no Gradio here).

Figures are built as the dicts plotly.js draws, not through ``plotly.graph_objects``: with
validation, one ``go.Figure`` of a few dozen traces takes ~0.3 s to build, too slow for a chart
redrawn every second; the dicts take well under a millisecond.

Each :class:`Panel` names the metrics it draws (exact names from :mod:`engine.metric_names`, or
prefixes such as ``rewards/`` for one line per reward component), so the charts follow whatever
the worker logs without a list of components typed here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine import metric_names as m
from ui.run_state import Series

PALETTE = (
    "#2563eb",
    "#dc2626",
    "#16a34a",
    "#9333ea",
    "#ea580c",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4b5563",
    "#65a30d",
)


@dataclass(frozen=True)
class Panel:
    """One chart: a title, the metrics it draws, and a plain-language note under it."""

    key: str
    title: str
    names: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    y_title: str = ""
    note: str = ""
    exclude_suffixes: tuple[str, ...] = ()
    only_for: tuple[str, ...] = ()  # algorithms that log it; empty: every algorithm
    note_for: tuple[str, ...] = ()  # algorithms the note is about; empty: every algorithm
    right_axis: tuple[str, ...] = ()  # metrics drawn against a second y axis on the right

    def note_shown_for(self, algorithm: str | None) -> bool:
        return bool(self.note) and (not self.note_for or algorithm in self.note_for)

    def shown_for(self, algorithm: str | None) -> bool:
        return not self.only_for or algorithm in self.only_for

    def matches(self, name: str) -> bool:
        if name in self.names:
            return True
        if any(name.endswith(suffix) for suffix in self.exclude_suffixes):
            return False
        return any(name.startswith(prefix) for prefix in self.prefixes)

    def select(self, names: Iterable[str]) -> list[str]:
        """The metric names this panel draws, exact names first, in a stable order."""
        names = list(names)
        exact = [n for n in self.names if n in names]
        rest = sorted(n for n in names if n not in self.names and self.matches(n))
        return exact + rest


PANELS: tuple[Panel, ...] = (
    Panel(
        "reward",
        "Reward: total and each component (raw mean)",
        names=(m.REWARD_TOTAL,),
        prefixes=("rewards/",),
        exclude_suffixes=("/std",),  # the spread within groups is not a reward level
        y_title="reward",
    ),
    Panel(
        "loss",
        "Loss",
        names=(m.LOSS_POLICY, m.LOSS_VALUE),
        y_title="loss",
        note="A policy loss near 0 is normal in GRPO/RLOO: advantages are centred within each "
        "group, so the loss averages out. Watch the reward, not the loss.",
        note_for=("grpo", "rloo"),
        # PPO's value loss is often 100x its policy loss: one axis draws the policy loss flat.
        right_axis=(m.LOSS_VALUE,),
    ),
    Panel("grad_norm", "Gradient norm", names=(m.GRAD_NORM,), y_title="L2 norm"),
    Panel("learning_rate", "Learning rate", names=(m.LEARNING_RATE,), y_title="learning rate"),
    Panel(
        "kl",
        "KL to the reference policy",
        names=(m.POLICY_KL, m.PPO_KL_TO_REF, m.PPO_APPROX_KL),
        y_title="KL",
        note="Logged only with a KL penalty (beta > 0); beta = 0 loads no reference model.",
    ),
    Panel(
        "entropy",
        "Policy entropy",
        names=(m.POLICY_ENTROPY, m.PPO_ENTROPY),
        y_title="nats per token",
    ),
    Panel(
        "clip",
        "Clip ratios",
        names=(m.PPO_CLIP_FRACTION, m.PPO_VALUE_CLIP_FRACTION),
        prefixes=("policy/clip_ratio",),
        y_title="share of tokens",
    ),
    Panel(
        "length",
        "Completion length",
        names=(
            m.COMPLETION_MEAN_LENGTH,
            "completions/mean_terminated_length",
            "completions/max_length",
        ),
        y_title="tokens",
    ),
    Panel(
        "signal",
        "Truncated completions and zero-std groups",
        names=(m.COMPLETION_CLIPPED_RATIO, m.REWARD_ZERO_STD_FRACTION),
        y_title="share",
        note="Truncated completions usually score 0 on correctness. Groups whose completions "
        "all score the same give GRPO no learning signal.",
    ),
    Panel(
        "eval",
        "Held-out evaluation",
        names=(m.EVAL_ACCURACY, m.EVAL_STRICT_ACCURACY, m.EVAL_FORMAT_RATE),
        prefixes=("eval/",),
        y_title="rate",
    ),
    Panel("perf", "Throughput", names=(m.TOKENS_PER_S,), y_title="tokens/s"),
    Panel(
        "value",
        "Value head (PPO)",
        names=(m.PPO_EXPLAINED_VARIANCE, m.PPO_VALUE_MEAN, m.PPO_RETURN_MEAN),
        y_title="value",
        only_for=("ppo",),
        note="Explained variance near 1: the critic predicts returns well; near 0 or "
        "below: its advantages are mostly noise.",
    ),
)


def panels_for(names: Iterable[str]) -> dict[str, list[str]]:
    """``{panel key: metric names it draws}`` for the given series names."""
    names = list(names)
    return {p.key: p.select(names) for p in PANELS}


def changed_panels(changed: Iterable[str]) -> set[str]:
    """Keys of the panels that draw any of the changed series."""
    changed = list(changed)
    return {p.key for p in PANELS if any(p.matches(n) for n in changed)}


SINGLE_STEP_TICKS = 12  # up to this many steps, a tick on every step
MAX_POINTS = 2000  # longer series are thinned for drawing (every k-th point, plus the last)

Figure = dict[str, Any]  # a Plotly figure as plain JSON data: {"data": [...], "layout": {...}}


def thin(steps: Sequence[int], values: Sequence[float | None]) -> tuple[list, list]:
    """At most about :data:`MAX_POINTS` points of a series, evenly spaced, always the last."""
    n = len(steps)
    if n <= MAX_POINTS:
        return list(steps), list(values)
    stride = -(-n // MAX_POINTS)
    keep = list(range(0, n, stride))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return [steps[i] for i in keep], [values[i] for i in keep]


def _layout(title: str, y_title: str, x_title: str = "step", height: int = 280) -> dict:
    axis = {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db", "automargin": True}
    return {
        "title": {"text": title, "font": {"size": 14}},
        "margin": {"l": 50, "r": 10, "t": 40, "b": 40},
        "height": height,
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"family": "sans-serif", "size": 11},
        "legend": {"orientation": "h", "y": -0.18, "font": {"size": 10}},
        "xaxis": {**axis, "title": {"text": x_title}} if x_title else axis,
        "yaxis": {**axis, "title": {"text": y_title}},
        "uirevision": "keep",  # zoom and hidden traces survive redraws
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


def _line(name: str, s: Series, color: str, width: float) -> dict:
    steps, values = thin(s.steps, s.values)
    return {
        "type": "scatter",
        "x": steps,
        "y": values,
        "name": name,
        "mode": "lines+markers" if len(steps) < 50 else "lines",
        "line": {"color": color, "width": width},
        "connectgaps": False,
    }


def _label(name: str) -> str:
    return name.removeprefix("rewards/") if name.startswith("rewards/") else name


def panel_figure(panel: Panel, series: Mapping[str, Series]) -> Figure:
    """The figure of one panel; an empty panel says what it is waiting for."""
    names = panel.select(series)
    data = [
        _line(_label(name), series[name], PALETTE[i % len(PALETTE)], 3 if i == 0 else 1.8)
        for i, name in enumerate(names)
    ]
    layout = _layout(f"{panel.title} (by step)", panel.y_title, x_title="")
    layout["xaxis"].update(step_axis(_last_step(series[n] for n in names)))
    right = [i for i, name in enumerate(names) if name in panel.right_axis]
    if right and len(right) < len(names):
        for i in right:
            data[i]["yaxis"] = "y2"
        layout["yaxis"]["title"] = {"text": _label(names[0])}
        layout["yaxis2"] = {
            "title": {"text": ", ".join(_label(names[i]) for i in right)},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "automargin": True,
        }
    if not data:
        layout["annotations"] = [_empty_note("no points yet")]
    return {"data": data, "layout": layout}


def overlay_figure(
    metric: str, runs: Mapping[str, Series], labels: Mapping[str, str] | None = None
) -> Figure:
    """One metric of several runs on shared axes (the Compare view)."""
    labels = labels or {}
    data = [
        _line(labels.get(run_id, run_id), s, PALETTE[i % len(PALETTE)], 2)
        for i, (run_id, s) in enumerate(runs.items())
    ]
    layout = _layout(metric, _label(metric), height=420)
    layout["xaxis"].update(step_axis(_last_step(runs.values())))
    if not data:
        layout["annotations"] = [_empty_note("pick runs and a metric")]
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
    layout = _layout(
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
