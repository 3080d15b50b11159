"""Plotly figures of the Runs and Compare views, built from metric series (no Gradio here).

Each :class:`Panel` names the metrics it draws (exact names from :mod:`engine.metric_names`, or
prefixes such as ``rewards/`` for one line per reward component), so the charts follow whatever
the worker logs without a list of components typed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

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

    def matches(self, name: str) -> bool:
        return name in self.names or any(name.startswith(p) for p in self.prefixes)

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
        y_title="reward",
    ),
    Panel(
        "loss",
        "Loss",
        names=(m.LOSS_POLICY, m.LOSS_VALUE),
        y_title="loss",
        note="A policy loss near 0 is normal in GRPO/RLOO: advantages are centred within each "
        "group, so the loss averages out. Watch the reward, not the loss.",
    ),
    Panel("kl", "KL to the reference policy", names=(m.POLICY_KL,), y_title="KL"),
    Panel("entropy", "Policy entropy", names=(m.POLICY_ENTROPY,), y_title="nats per token"),
    Panel("clip", "Clip ratios", prefixes=("policy/clip_ratio",), y_title="share of tokens"),
    Panel(
        "length",
        "Completion length",
        names=(m.COMPLETION_MEAN_LENGTH,),
        prefixes=("completions/mean", "completions/min", "completions/max"),
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
)


def panels_for(names: Iterable[str]) -> dict[str, list[str]]:
    """``{panel key: metric names it draws}`` for the given series names."""
    names = list(names)
    return {p.key: p.select(names) for p in PANELS}


def changed_panels(changed: Iterable[str]) -> set[str]:
    """Keys of the panels that draw any of the changed series."""
    changed = list(changed)
    return {p.key for p in PANELS if any(p.matches(n) for n in changed)}


def _layout(fig: go.Figure, title: str, y_title: str, x_title: str = "step") -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        margin={"l": 50, "r": 10, "t": 40, "b": 40},
        height=280,
        template="plotly_white",
        legend={"orientation": "h", "y": -0.25, "font": {"size": 10}},
        xaxis_title=x_title,
        yaxis_title=y_title,
        uirevision="keep",  # zoom and hidden traces survive redraws
    )
    return fig


def _label(name: str) -> str:
    return name.removeprefix("rewards/") if name.startswith("rewards/") else name


def panel_figure(panel: Panel, series: Mapping[str, Series]) -> go.Figure:
    """The figure of one panel; an empty panel says what it is waiting for."""
    fig = go.Figure()
    for i, name in enumerate(panel.select(series)):
        s = series[name]
        fig.add_trace(
            go.Scatter(
                x=s.steps,
                y=s.values,
                name=_label(name),
                mode="lines+markers" if len(s) < 50 else "lines",
                line={"color": PALETTE[i % len(PALETTE)], "width": 3 if i == 0 else 1.8},
                connectgaps=False,
            )
        )
    if not fig.data:
        fig.add_annotation(
            text="no points yet", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5
        )
    return _layout(fig, panel.title, panel.y_title)


def overlay_figure(
    metric: str, runs: Mapping[str, Series], labels: Mapping[str, str] | None = None
) -> go.Figure:
    """One metric of several runs on shared axes (the Compare view)."""
    labels = labels or {}
    fig = go.Figure()
    for i, (run_id, s) in enumerate(runs.items()):
        fig.add_trace(
            go.Scatter(
                x=s.steps,
                y=s.values,
                name=labels.get(run_id, run_id),
                mode="lines+markers" if len(s) < 50 else "lines",
                line={"color": PALETTE[i % len(PALETTE)], "width": 2},
            )
        )
    if not fig.data:
        fig.add_annotation(
            text="pick runs and a metric", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5
        )
    fig = _layout(fig, metric, _label(metric))
    fig.update_layout(height=420)
    return fig


def contribution_figure(
    sample_labels: Sequence[str],
    contributions: Mapping[str, Sequence[float | None]],
    totals: Sequence[float | None],
) -> go.Figure:
    """Stacked bars of each component's weighted contribution per sample, with the total.

    Positive and negative contributions stack away from zero (``barmode="relative"``), so a bar's
    net height is the sample's total reward.
    """
    fig = go.Figure()
    for i, (name, values) in enumerate(contributions.items()):
        fig.add_trace(
            go.Bar(
                x=list(sample_labels),
                y=[0.0 if v is None else v for v in values],
                name=name,
                marker_color=PALETTE[i % len(PALETTE)],
            )
        )
    fig.add_trace(
        go.Scatter(
            x=list(sample_labels),
            y=list(totals),
            name="total",
            mode="markers",
            marker={"color": "black", "symbol": "diamond", "size": 8},
        )
    )
    fig = _layout(
        fig, "Weighted contribution of each component per sample", "reward", x_title="sample"
    )
    fig.update_layout(barmode="relative", height=320)
    return fig
