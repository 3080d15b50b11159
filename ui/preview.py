"""The Preview tab: generate completions with a model, score them with the Design tab's reward.

"Generate" samples completions (with a progress bar) into a :class:`~ui.preview_state.PreviewCache`
kept per browser session. Every change of the reward re-scores that cache at once, without
generating again: the table (tags and extracted answer highlighted, one column per component),
the stacked contributions per sample and the group diagnostics follow the weights live. Picking a
row shows that sample's trace and the reward-hacking probes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.config import GenerationSettings
from engine.dataclass_io import ConfigError
from rewards.deadline import call_deadline
from rewards.mathpool import INTERACTIVE_DEADLINE_S
from rewards.probes import run_probes
from rewards.spec import RewardSpec
from ui import charts, hints
from ui.context import AppContext
from ui.data_inputs import DataInputs, build_data_inputs, data_spec
from ui.design import TRACE_HEADERS, TRACE_WIDTHS, DesignHandles
from ui.messages import escape, warn
from ui.named import error_line
from ui.plots import plot_value
from ui.preview_run import (
    CUSTOM,
    PreviewError,
    PreviewRequest,
    generate_preview,
    model_choices,
    unavailable_models_note,
)
from ui.preview_state import PreviewCache, PreviewScores
from ui.trace_view import fmt

logger = logging.getLogger(__name__)


def summary_markdown(cache: PreviewCache, scores: PreviewScores) -> str:
    """Source line, mean total, and the plain-language warnings of this preview."""
    if cache.empty:
        return "Generate completions to preview the reward on them."
    lines = [f"**{cache.source}** · mean total reward **{fmt(scores.mean_total(), 4)}**"]
    diag = scores.diagnostics()
    found = hints.preview_hints(cache.truncated) + list(diag.warnings)
    lines += [warn(escape(w)) for w in dict.fromkeys(found)]
    return "\n\n".join(lines)


def diagnostics_markdown(scores: PreviewScores) -> str:
    """Per-group mean/std, zero-std share, variance shares and component correlations."""
    if not scores.scored:
        return ""
    diag = scores.diagnostics()
    lines = [
        "#### Group diagnostics",
        f"- groups with identical rewards (no GRPO signal): **{diag.zero_std_fraction:.0%}**",
    ]
    shares = [f"{k} {v:.0%}" for k, v in diag.variance_share.items() if v is not None]
    if shares:
        lines.append("- share of within-group reward variance: " + ", ".join(shares))
    pairs = [
        f"{a}~{b} {r:+.2f}"
        for a, row in diag.correlations.items()
        for b, r in row.items()
        if a < b and r is not None
    ]
    if pairs:
        lines.append("- component correlations: " + ", ".join(pairs))
    lines.append(
        "- per group (mean ± std): "
        + ", ".join(f"#{g.group_id} {fmt(g.mean)} ± {g.std:.2g}" for g in diag.groups)
    )
    return "\n".join(lines)


def sample_trace(scores: PreviewScores, index: int) -> list[list[Any]]:
    s = scores.scored[index]
    return [
        [t.name, fmt(t.raw), fmt(t.weight), fmt(t.contribution), t.explanation] for t in s.trace
    ]


PROBE_HEADERS = ["probe", "total", "change", "components that moved", "verdict"]


def probe_rows(
    spec: RewardSpec, cache: PreviewCache, index: int, tokenize: Any = None
) -> list[list[Any]]:
    """The reward-hacking probes of one cached sample, one row per probe."""
    results = run_probes(
        spec,
        cache.prompts[index],
        cache.completions[index],
        cache.answers[index],
        completion_ids=cache.completion_ids[index] if tokenize else None,
        tokenize=tokenize,
    )
    rows = []
    for r in results:
        moved = ", ".join(
            f"{c.name} {c.delta_contribution:+.2g}" for c in r.components if c.delta_contribution
        )
        verdict = "paid for" if r.rewarded else ("n/a" if not r.applicable else "ok")
        rows.append([r.name, fmt(r.total), fmt(r.delta_total), moved, r.summary or verdict])
    return rows


@dataclass
class PreviewControls:
    """The left column: model, data and sampling inputs, each with its error line."""

    model_key: gr.Dropdown
    custom_model: gr.Textbox
    refresh_models: gr.Button
    data: DataInputs
    num_prompts: gr.Number
    samples: gr.Number
    temperature: gr.Number
    max_tokens: gr.Number
    seed: gr.Number
    generate: gr.Button
    errors: dict[str, gr.Markdown]  # PreviewError field -> its error line


@dataclass
class PreviewResults:
    """The right column: scores of the generated samples, one sample's trace and probes."""

    summary: gr.Markdown
    table: gr.Dataframe
    contrib: gr.Plot
    diagnostics: gr.Markdown
    trace: gr.Dataframe
    probes: gr.Dataframe


def _build_controls(ctx: AppContext) -> PreviewControls:
    gen = GenerationSettings()
    errors: dict[str, gr.Markdown] = {}

    def error_md(name: str) -> None:
        errors[name] = error_line(f"preview-error-{name}")

    gr.Markdown("### Model")
    choices = model_choices(ctx)
    model_key = gr.Dropdown(
        label="Model", choices=choices, value=choices[0][1], elem_id="preview-model"
    )
    custom_model = gr.Textbox(
        label="Hugging Face id or local folder",
        visible=False,
        placeholder="Qwen/Qwen2.5-0.5B-Instruct or /path/to/model",
    )
    refresh_models = gr.Button("Refresh model list (run checkpoints)", size="sm")
    note = unavailable_models_note()
    if note:
        gr.Markdown(f"<small>{note}</small>")
    error_md("model")
    gr.Markdown("### Data")
    data = build_data_inputs("heldout", "preview")
    error_md("data")
    gr.Markdown("### Sampling")
    # Each number has its error line right under it (not all of them under Seed).
    with gr.Row():
        with gr.Column(min_width=120):
            num_prompts = gr.Number(
                label="Prompts", value=4, precision=0, elem_id="preview-prompts"
            )
            error_md("num_prompts")
        with gr.Column(min_width=120):
            samples = gr.Number(
                label="Samples per prompt", value=4, precision=0, elem_id="preview-samples"
            )
            error_md("samples_per_prompt")
    with gr.Row():
        with gr.Column(min_width=120):
            temperature = gr.Number(
                label="Temperature", value=gen.temperature, elem_id="preview-temperature"
            )
            error_md("temperature")
        with gr.Column(min_width=120):
            max_tokens = gr.Number(
                label="Max new tokens",
                value=gen.max_completion_length,
                precision=0,
                elem_id="preview-max-tokens",
            )
            error_md("max_new_tokens")
    seed = gr.Number(label="Seed", value=0, precision=0, elem_id="preview-seed")
    error_md("seed")
    generate = gr.Button("Generate", variant="primary", elem_id="preview-generate")
    return PreviewControls(
        model_key=model_key,
        custom_model=custom_model,
        refresh_models=refresh_models,
        data=data,
        num_prompts=num_prompts,
        samples=samples,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        generate=generate,
        errors=errors,
    )


def _read_only_table(headers: list[str], elem_id: str, **options: Any) -> gr.Dataframe:
    """An empty, wrapped table the handlers fill; the user reads it, never edits it."""
    return gr.Dataframe(
        headers=headers, value=[], interactive=False, wrap=True, elem_id=elem_id, **options
    )


def _build_results() -> PreviewResults:
    summary = gr.Markdown(
        "Generate completions to preview the reward on them.", elem_id="preview-summary"
    )
    table = _read_only_table(["#", "completion", "total"], "preview-table", max_height=520)
    contrib = gr.Plot(show_label=False, elem_id="preview-contributions")
    diagnostics = gr.Markdown(elem_id="preview-diagnostics")
    gr.Markdown("### Selected sample (click a row)")
    trace = _read_only_table(TRACE_HEADERS, "preview-trace", column_widths=TRACE_WIDTHS)
    probes = _read_only_table(
        PROBE_HEADERS,
        "preview-probes",
        label="Reward-hacking probes: what cheap edits the reward pays for",
    )
    return PreviewResults(summary, table, contrib, diagnostics, trace, probes)


def build_preview(ctx: AppContext, design: DesignHandles) -> None:
    cache_state = gr.State(PreviewCache())
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=300):
            controls = _build_controls(ctx)
        with gr.Column(scale=3, min_width=500):
            results = _build_results()
    _wire_model_picker(ctx, controls)
    _wire_scores(ctx, design, controls, results, cache_state)


def _wire_model_picker(ctx: AppContext, controls: PreviewControls) -> None:
    model_key, custom_model = controls.model_key, controls.custom_model

    def on_model(key: str):
        return gr.Textbox(visible=key == CUSTOM)

    model_key.change(on_model, model_key, custom_model, api_visibility="private")
    controls.refresh_models.click(
        lambda: gr.Dropdown(choices=model_choices(ctx)), outputs=model_key, api_visibility="private"
    )


def _wire_scores(
    ctx: AppContext,
    design: DesignHandles,
    controls: PreviewControls,
    results: PreviewResults,
    cache_state: gr.State,
) -> None:
    """Generate into the session's cache; re-score it on every reward change; trace and probe
    the clicked sample."""
    errors = controls.errors
    error_names = list(errors)

    def show(cache: PreviewCache, spec_dict: dict | None):
        if spec_dict is None:  # the Design tab has fields to fix: keep the last scores
            return (gr.skip(),) * len(shown)
        with call_deadline(INTERACTIVE_DEADLINE_S):  # math-verify on hostile answers
            scores = cache.rescore(RewardSpec.from_dict(spec_dict))
        n = len(scores.components)
        datatypes = ["number", "number", "str", "html", "str", "str", *["number"] * (n + 1)]
        share = max(4, 24 // max(1, n + 1))
        widths = ["3%", "4%", "18%", f"{60 - share * (n + 1)}%", "7%", "8%"]
        widths += [f"{share}%"] * (n + 1)
        return (
            summary_markdown(cache, scores),
            gr.Dataframe(
                value=scores.rows(),
                headers=scores.headers(),
                datatype=datatypes,
                column_widths=widths,
            ),
            plot_value(
                charts.contribution_figure(
                    [str(i) for i in range(len(cache))], scores.contributions(), scores.totals
                )
            ),
            diagnostics_markdown(scores),
        )

    shown = [results.summary, results.table, results.contrib, results.diagnostics]

    def on_generate(
        cache,
        spec_dict,
        key,
        custom,
        src,
        split_v,
        file,
        hid,
        hcfg,
        pcol,
        acol,
        scol,
        n,
        k,
        temp,
        max_new,
        seed_v,
        progress=gr.Progress(),  # noqa: B008 (how Gradio injects a progress bar)
    ):
        hidden = [gr.Markdown(visible=False) for _ in error_names]
        try:
            try:
                data = data_spec(
                    src, split_v, file, hid, hcfg, pcol, acol, scol, policy=ctx.input_policy
                )
            except ConfigError as exc:  # an upload of a type the data picker does not read
                raise PreviewError("data", str(exc)) from None
            request = PreviewRequest(
                model_key=key,
                custom_model=custom or "",
                data=data,
                num_prompts=n,
                samples_per_prompt=k,
                temperature=temp,
                max_new_tokens=max_new,
                seed=seed_v or 0,
            )
            cache = generate_preview(ctx, request, lambda f, text: progress(f, desc=text))
        except Exception as exc:  # shown next to the input it is about, never as a trace
            if not isinstance(exc, PreviewError):
                logger.exception("Preview generation failed")
                exc = PreviewError("model", f"generation failed: {type(exc).__name__}: {exc}")
            field = exc.field if exc.field in error_names else "data"
            errs = [
                gr.Markdown(value=warn(escape(exc)), visible=True) if name == field else h
                for name, h in zip(error_names, hidden, strict=True)
            ]
            return (cache, *[gr.skip()] * len(shown), *errs)
        return (cache, *show(cache, spec_dict), *hidden)

    c = controls
    c.generate.click(
        on_generate,
        inputs=[
            cache_state,
            design.spec_state,
            c.model_key,
            c.custom_model,
            *c.data.all,
            c.num_prompts,
            c.samples,
            c.temperature,
            c.max_tokens,
            c.seed,
        ],
        outputs=[cache_state, *shown, *[errors[n] for n in error_names]],
        concurrency_limit=1,
        concurrency_id="generate",
        api_visibility="private",
    )
    design.spec_state.change(
        show,
        inputs=[cache_state, design.spec_state],
        outputs=shown,
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )

    _wire_selected_sample(ctx, design, controls, results, cache_state)


def _wire_selected_sample(
    ctx: AppContext,
    design: DesignHandles,
    controls: PreviewControls,
    results: PreviewResults,
    cache_state: gr.State,
) -> None:
    """The clicked sample's trace and probes: scored with the current reward on every change,
    cleared when a new Generate replaces the samples."""
    selected = gr.State(None)  # index of the clicked sample in the session's cache

    def trace_and_probes(cache: PreviewCache, spec_dict: dict, index: int):
        spec = RewardSpec.from_dict(spec_dict)
        with call_deadline(INTERACTIVE_DEADLINE_S):
            scores = cache.rescore(spec)
            rows = probe_rows(spec, cache, index, ctx.cached_tokenizer(cache.model))
        return sample_trace(scores, index), rows

    def on_select(cache: PreviewCache, spec_dict: dict | None, evt: gr.SelectData):
        if cache.empty or spec_dict is None:
            return gr.skip(), gr.skip(), gr.skip()
        index = int(evt.index[0])
        return (*trace_and_probes(cache, spec_dict, index), index)

    def on_spec(cache: PreviewCache, spec_dict: dict | None, index: Any):
        if spec_dict is None or not isinstance(index, int) or not 0 <= index < len(cache):
            return gr.skip(), gr.skip()
        return trace_and_probes(cache, spec_dict, index)

    results.table.select(
        on_select,
        inputs=[cache_state, design.spec_state],
        outputs=[results.trace, results.probes, selected],
        api_visibility="private",
    )
    design.spec_state.change(
        on_spec,
        inputs=[cache_state, design.spec_state, selected],
        outputs=[results.trace, results.probes],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )
    # New samples replaced the old ones: the old sample's trace would read as one of them.
    cache_state.change(
        lambda: ([], [], None),
        outputs=[results.trace, results.probes, selected],
        api_visibility="private",
        show_progress="hidden",
    )
