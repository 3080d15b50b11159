"""The Preview's reward lab panel: A/B of specs and weight sweeps on the cached completions.

Built by :func:`build_lab` inside the Preview tab, on its session cache and the Design tab's
spec. "Compare" scores the cache with the current spec and up to three others (a preset, a copy
of the current spec to edit, a file) and shows the table sortable by disagreement; "Sweep"
re-weights one or two weights over a grid (a line chart or a heatmap, probe onsets marked).
The work is in :mod:`ui.preview.lab_views`; this module only builds and wires the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from rewards.lab.advantages import SCALE_REWARDS
from rewards.spec import DEFAULT_PRESET, RewardSpec, preset
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from ui.plots.lab_charts import sweep_heatmap, sweep_lines, sweep_metric_choices
from ui.plots.plot_output import plot_value
from ui.preview.cache import PreviewCache
from ui.preview.lab_views import (
    AB_HEADERS,
    COPY,
    NONE,
    OTHER_SPECS,
    SORTS,
    SOURCES,
    ab_markdown,
    ab_table,
    compare_cache,
    onsets_markdown,
    other_spec,
    sweep_cache,
    verdict_markdown,
)
from ui.shared.context import AppContext
from ui.shared.lab_inputs import LabError, read_spec_upload
from ui.shared.messages import escape, warn

AB_WAITING = (
    "Pick another spec above and press **Compare**: each sample's total and advantage under "
    "every spec fill the table."
)


@dataclass
class SweepAxisInputs:
    component: gr.Dropdown
    start: gr.Number
    stop: gr.Number
    points: gr.Number


def _error(message: str | None) -> gr.Markdown:
    if not message:
        return gr.Markdown(visible=False)
    return gr.Markdown(value=warn(escape(message)), visible=True)


def _slot_text(source: str, design: RewardSpec | None) -> str:
    """The spec text an A/B slot starts from."""
    if source == COPY:
        return design.to_yaml() if design else ""
    if source in (NONE, None, ""):
        return ""
    return preset(source).to_yaml()


def _upload_text(file: Any) -> Any:
    try:
        return read_spec_upload(file)
    except LabError as exc:
        raise gr.Error(str(exc), print_exception=False) from None


def build_lab(ctx: AppContext, spec_state: gr.State, cache_state: gr.State) -> None:
    """The lab panel (an accordion) under the Preview's results."""
    with gr.Accordion(
        "Reward lab: compare specs and sweep weights on these completions",
        open=False,
        elem_id="preview-lab",
    ):
        with gr.Tab("A/B of specs", elem_id="lab-ab-tab"):
            _build_ab(ctx, spec_state, cache_state)
        with gr.Tab("Weight sweep", elem_id="lab-sweep-tab"):
            _build_sweep(ctx, spec_state, cache_state)


def _build_ab(ctx: AppContext, spec_state: gr.State, cache_state: gr.State) -> None:
    gr.Markdown(
        "The current spec against up to three others on the **same** completions: totals, "
        "GRPO advantages (as TRL computes them), samples whose advantage flips sign, and the "
        "hacking probes each spec pays for. Pick a source, then edit its spec freely."
    )
    # The verdicts sit above the editors, which fold away once compared: the results were
    # 1,500 px down, under three open spec editors.
    verdicts = gr.Markdown(visible=False, elem_id="lab-verdicts")
    sources, texts = [], []
    with (
        gr.Accordion("The specs to compare", open=True, elem_id="lab-editors") as editors,
        gr.Row(),
    ):
        for i in range(OTHER_SPECS):
            with gr.Column(min_width=220):
                source = gr.Dropdown(
                    SOURCES, value=NONE, label=f"spec {i + 2}", elem_id=f"lab-source-{i}"
                )
                text = gr.Code(language="yaml", label="its spec", lines=6, elem_id=f"lab-text-{i}")
                upload = gr.UploadButton(
                    "Load a file", file_types=[".yaml", ".yml", ".json"], size="sm"
                )
                source.change(_slot_text, [source, spec_state], text, api_visibility="private")
                upload.upload(_upload_text, upload, text, api_visibility="private")
                sources.append(source)
                texts.append(text)
    with gr.Row():
        scale = gr.Dropdown(list(SCALE_REWARDS), value="group", label="scale_rewards (GRPO)")
        sort = gr.Dropdown(list(SORTS), value=next(iter(SORTS)), label="sort")
        only_flips = gr.Checkbox(False, label="only samples whose advantage flips")
        run = gr.Button("Compare", variant="primary", elem_id="lab-compare")
    error = gr.Markdown(visible=False, elem_id="lab-ab-error")
    # Before the first Compare the table names its columns and the summary says how to fill
    # it (Gradio headed an empty table "1 2 3").
    summary = gr.Markdown(AB_WAITING, elem_id="lab-ab-summary")
    table = gr.Dataframe(
        value=[],
        headers=[*AB_HEADERS, "total", "advantage"],
        interactive=False,
        wrap=True,
        elem_id="lab-ab-table",
        max_height=480,
    )
    result_state = gr.State(None)

    def on_compare(
        cache: PreviewCache,
        design: RewardSpec | None,
        scale_rewards: str,
        order: str,
        flips: bool,
        *slots: str,
    ):
        try:
            if design is None:
                raise LabError("the Design tab's spec has fields to fix first")
            others = []
            for i in range(OTHER_SPECS):
                spec = other_spec(slots[i], slots[OTHER_SPECS + i], f"spec {i + 2}")
                if spec is not None:
                    label = slots[i] if slots[i] not in (NONE, COPY) else f"spec {i + 2}"
                    others.append((label, spec))
            tokenize = ctx.cached_tokenizer(cache.model)
            with call_deadline(INTERACTIVE_DEADLINE_S * (1 + len(others))):
                result = compare_cache(cache, design, others, scale_rewards, tokenize)
        except LabError as exc:
            return gr.skip(), _error(str(exc)), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        headers, rows = ab_table(result, cache, order, flips)
        return (
            result,
            _error(None),
            ab_markdown(result),
            gr.Dataframe(value=rows, headers=headers),
            gr.Markdown(verdict_markdown(result), visible=True),
            gr.Accordion(open=False),
        )

    def on_view(cache: PreviewCache, result: dict | None, order: str, flips: bool):
        if result is None:
            return gr.skip()
        headers, rows = ab_table(result, cache, order, flips)
        return gr.Dataframe(value=rows, headers=headers)

    run.click(
        on_compare,
        [cache_state, spec_state, scale, sort, only_flips, *sources, *texts],
        [result_state, error, summary, table, verdicts, editors],
        concurrency_limit=2,
        concurrency_id="lab",
        api_visibility="private",
    )
    for control in (sort, only_flips):
        control.change(
            on_view, [cache_state, result_state, sort, only_flips], table, api_visibility="private"
        )


def _axis_inputs(i: int, optional: bool) -> SweepAxisInputs:
    names = preset(DEFAULT_PRESET).metric_names()  # the Design tab's spec until it changes
    with gr.Row():
        component = gr.Dropdown(
            [NONE, *names] if optional else names,
            value=NONE if optional else names[0],
            label=f"weight {i}" + (" (optional: a heatmap)" if optional else ""),
            elem_id=f"lab-weight-{i}",
        )
        start = gr.Number(0.0, label="from", elem_id=f"lab-from-{i}")
        stop = gr.Number(2.0, label="to", elem_id=f"lab-to-{i}")
        points = gr.Number(
            21 if optional else 201, label="points", precision=0, elem_id=f"lab-points-{i}"
        )
    return SweepAxisInputs(component, start, stop, points)


def _build_sweep(ctx: AppContext, spec_state: gr.State, cache_state: gr.State) -> None:
    gr.Markdown(
        "Sweep one or two weights of the current spec on the cached completions: the share of "
        "zero-variance groups, the correlation of the total with correctness, each component's "
        "share of the advantage, and each probe's payoff. Dotted lines (or crosses) mark where a "
        "probe starts paying."
    )
    first, second = _axis_inputs(1, False), _axis_inputs(2, True)
    with gr.Row():
        scale = gr.Dropdown(list(SCALE_REWARDS), value="group", label="scale_rewards (GRPO)")
        metric = gr.Dropdown(
            [], label="the heatmap shows", visible=False, elem_id="lab-heatmap-metric"
        )
        run = gr.Button("Sweep", variant="primary", elem_id="lab-sweep")
    error = gr.Markdown(visible=False, elem_id="lab-sweep-error")
    plot = gr.Plot(show_label=False, elem_id="lab-sweep-plot")
    onsets = gr.Markdown(elem_id="lab-onsets")
    result_state = gr.State(None)

    def on_spec(design: RewardSpec | None):
        if design is None:
            return gr.skip(), gr.skip()
        names = design.metric_names()
        return (
            gr.Dropdown(choices=names, value=names[0]),
            gr.Dropdown(choices=[NONE, *names], value=NONE),
        )

    spec_state.change(
        on_spec, spec_state, [first.component, second.component], api_visibility="private"
    )

    def figure(result: dict[str, Any], key: str | None):
        if len(result["axes"]) == 1:
            return plot_value(sweep_lines(result))
        return plot_value(sweep_heatmap(result, key or "zero_std_fraction"))

    def on_sweep(cache: PreviewCache, design: RewardSpec | None, scale_rewards: str, *values: Any):
        try:
            if design is None:
                raise LabError("the Design tab's spec has fields to fix first")
            axes = [tuple(values[:4])]
            if values[4] not in (NONE, None, ""):
                axes.append(tuple(values[4:]))
            axes = [(n, float(a or 0), float(b or 0), int(k or 0)) for n, a, b, k in axes]
            tokenize = ctx.cached_tokenizer(cache.model)
            with call_deadline(INTERACTIVE_DEADLINE_S):
                result = sweep_cache(cache, design, axes, scale_rewards, tokenize)
        except LabError as exc:
            return gr.skip(), _error(str(exc)), gr.skip(), gr.skip(), gr.skip()
        choices = sweep_metric_choices(result)
        return (
            result,
            _error(None),
            figure(result, "zero_std_fraction"),
            onsets_markdown(result),
            gr.Dropdown(
                choices=choices, value="zero_std_fraction", visible=len(result["axes"]) == 2
            ),
        )

    inputs = [first.component, first.start, first.stop, first.points]
    inputs += [second.component, second.start, second.stop, second.points]
    run.click(
        on_sweep,
        [cache_state, spec_state, scale, *inputs],
        [result_state, error, plot, onsets, metric],
        concurrency_limit=2,
        concurrency_id="lab",
        api_visibility="private",
    )
    metric.change(
        lambda result, key: gr.skip() if result is None else figure(result, key),
        [result_state, metric],
        plot,
        api_visibility="private",
    )
