"""The Preview tab: generate completions with a model, score them with the Design tab's reward.

"Generate" samples completions (with a progress bar) into a :class:`~ui.preview.cache.PreviewCache`
kept per browser session. Every change of the reward re-scores that cache at once, without
generating again: the table (tags and extracted answer highlighted, one column per component),
the stacked contributions per sample and the group diagnostics follow the weights live. Picking a
row shows that sample's trace and the reward-hacking probes. The parts are laid out in
:mod:`ui.preview.layout`; this module wires their events.
"""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr

from engine.fields import ConfigError
from rewards.analysis.probes import run_probes
from rewards.spec import RewardSpec
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from ui.access.identity import LOCAL_VIEWER, IdentityError, Viewer, viewer_for
from ui.design.tab import DesignHandles
from ui.memory.kept_preview import PreviewHandles
from ui.plots import charts
from ui.plots.plot_output import plot_value
from ui.preview.cache import PreviewCache, PreviewScores
from ui.preview.generate import (
    CUSTOM,
    PreviewError,
    PreviewRequest,
    generate_preview,
    model_choices,
)
from ui.preview.lab import build_lab
from ui.preview.layout import PreviewControls, PreviewResults, build_preview_controls, build_results
from ui.preview.tools_input import agent_model_defaults
from ui.shared import hints
from ui.shared.context import AppContext
from ui.shared.data_inputs import data_spec
from ui.shared.messages import escape, warn
from ui.shared.named_values import Updates, Values, show_error_at
from ui.shared.trace_view import fmt
from ui.shared.upload_check import as_uploaded

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
        scores.advantage_line(),
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


def build_preview(ctx: AppContext, design: DesignHandles) -> PreviewHandles:
    cache_state = gr.State(PreviewCache())
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=300):
            controls = build_preview_controls(ctx)
        with gr.Column(scale=3, min_width=500):
            results = build_results()
            build_lab(ctx, design.spec_state, cache_state)
    _wire_model_picker(ctx, controls)
    _wire_scores(ctx, design, controls, results, cache_state)

    def draw(cache: PreviewCache, spec: RewardSpec) -> tuple[Any, ...]:
        with call_deadline(INTERACTIVE_DEADLINE_S):
            return _score_views(cache, cache.rescore(spec))

    views = [results.summary, results.table, results.contrib, results.diagnostics]
    return PreviewHandles(cache_state, views, draw)  # what a reload redraws (ui.memory)


def _wire_model_picker(ctx: AppContext, controls: PreviewControls) -> None:
    model_key, custom_model = controls.model_key, controls.custom_model

    def on_model(key: str):
        agent = agent_model_defaults(key)  # the agent model: its tool and task picked too
        return gr.Textbox(visible=key == CUSTOM), *(agent or (gr.skip(),) * 3)

    agent_inputs = [controls.tools, controls.data.task, controls.sampling["max_new_tokens"]]
    model_key.change(on_model, model_key, [custom_model, *agent_inputs], api_visibility="private")
    controls.refresh_models.click(
        lambda: gr.Dropdown(choices=model_choices(ctx)), outputs=model_key, api_visibility="private"
    )


def preview_request(
    ctx: AppContext, controls: PreviewControls, raw: Values, viewer: Viewer = LOCAL_VIEWER
) -> PreviewRequest:
    """The request of the Preview form; ``raw`` is what Gradio passes for a set of inputs
    (component -> value); an uploaded file is stored among ``viewer``'s uploads. A data
    picker it cannot read raises :class:`PreviewError`."""
    policy = ctx.policy_for(viewer.owner, viewer.is_admin)
    try:
        data = data_spec(*(raw[c] for c in controls.data.all), policy=policy)
    except ConfigError as exc:  # an upload of a type the data picker does not read
        raise PreviewError("data", str(exc)) from None
    sampling = {name: raw[comp] for name, comp in controls.sampling.items()}
    if sampling["seed"] is None:  # an emptied seed input
        sampling["seed"] = 0
    request = PreviewRequest(
        model_key=raw[controls.model_key],
        custom_model=raw[controls.custom_model] or "",
        data=data,
        tools=tuple(raw[controls.tools] or ()),
        **sampling,
    )
    return request  # checked by generate_preview, against this app's caps


def _show_error(errors: dict[str, gr.Markdown], exc: PreviewError | None) -> Updates:
    """Updates that show ``exc`` on its input's error line (the data's when it names none) and
    hide every other line."""
    where = None if exc is None else exc.field if exc.field in errors else "data"
    return show_error_at(errors, where, exc)


def _score_views(cache: PreviewCache, scores: PreviewScores) -> tuple[Any, ...]:
    """Summary, table, contribution chart and diagnostics of the scored cache."""
    n = len(scores.components)
    datatypes = ["number", "number", "str", "html", "str", "str", *["number"] * (n + 1)]
    share = max(4, 24 // max(1, n + 1))
    # Wide enough for the headers "group" and "extracted" beside their menu buttons.
    widths = ["3%", "5%", "17%", f"{56 - share * (n + 1)}%", "7%", "12%"]
    widths += [f"{share}%"] * (n + 1)
    return (
        summary_markdown(cache, scores),
        gr.Dataframe(
            value=scores.rows(), headers=scores.headers(), datatype=datatypes, column_widths=widths
        ),
        plot_value(
            charts.contribution_figure(
                [str(i) for i in range(len(cache))], scores.contributions(), scores.totals
            )
        ),
        diagnostics_markdown(scores),
    )


def _selected_index(cache: PreviewCache, index: Any) -> int | None:
    """``index`` when it still names a sample of ``cache``, else None."""
    return index if isinstance(index, int) and 0 <= index < len(cache) else None


def _wire_scores(
    ctx: AppContext,
    design: DesignHandles,
    controls: PreviewControls,
    results: PreviewResults,
    cache_state: gr.State,
) -> None:
    """Generate into the session's cache; re-score it on every reward change (once: the table
    and the clicked sample's trace share the scores); trace and probe the clicked sample."""
    errors = controls.errors
    selected = gr.State(None)  # index of the clicked sample in the session's cache
    shown = [results.summary, results.table, results.contrib, results.diagnostics]
    sample = [results.trace, results.probes]

    def sample_views(spec: RewardSpec, cache: PreviewCache, scores: PreviewScores, index: int):
        with call_deadline(INTERACTIVE_DEADLINE_S):
            rows = probe_rows(spec, cache, index, ctx.cached_tokenizer(cache.model))
        return sample_trace(scores, index), rows

    def on_spec(cache: PreviewCache, spec: RewardSpec | None, index: Any):
        if spec is None:  # the Design tab has fields to fix: keep the last scores
            return (gr.skip(),) * (len(shown) + len(sample))
        with call_deadline(INTERACTIVE_DEADLINE_S):  # math-verify on hostile answers
            scores = cache.rescore(spec)
        index = _selected_index(cache, index)
        if index is None:
            return (*_score_views(cache, scores), gr.skip(), gr.skip())
        return (*_score_views(cache, scores), *sample_views(spec, cache, scores, index))

    def on_generate(
        raw: Values,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
        progress=gr.Progress(),  # noqa: B008 (how Gradio injects a progress bar)
    ) -> Updates:
        cache = raw[cache_state]
        try:
            viewer = viewer_for(request, profile)
            asked = preview_request(ctx, controls, raw, viewer)
            policy = ctx.policy_for(viewer.owner, viewer.is_admin)
            cache = generate_preview(
                ctx, asked, lambda f, text: progress(f, desc=text), policy=policy
            )
        except Exception as exc:  # shown next to the input it is about, never as a trace
            if isinstance(exc, IdentityError):
                exc = PreviewError("data", str(exc))
            elif isinstance(exc, PreviewError) and exc.field == "data":  # the upload's own name
                exc = PreviewError("data", as_uploaded(str(exc), raw[controls.data.file]))
            elif not isinstance(exc, PreviewError):
                logger.exception("Preview generation failed")
                exc = PreviewError("model", f"generation failed: {type(exc).__name__}: {exc}")
            return {cache_state: cache, **_show_error(errors, exc)}
        views = on_spec(cache, raw[design.spec_state], None)[: len(shown)]
        return {
            cache_state: cache,
            **dict(zip(shown, views, strict=True)),
            **_show_error(errors, None),
        }

    def on_select(cache: PreviewCache, spec: RewardSpec | None, evt: gr.SelectData):
        if cache.empty or spec is None:
            return gr.skip(), gr.skip(), gr.skip()
        index = int(evt.index[0])
        with call_deadline(INTERACTIVE_DEADLINE_S):
            scores = cache.rescore(spec)
        return (*sample_views(spec, cache, scores, index), index)

    c = controls
    c.generate.click(
        on_generate,
        inputs={
            cache_state,
            design.spec_state,
            c.model_key,
            c.custom_model,
            *c.data.all,
            c.tools,
            *c.sampling.values(),
        },
        outputs=[cache_state, *shown, *errors.values()],
        concurrency_limit=1,
        concurrency_id="generate",
        api_visibility="private",
    )
    design.spec_state.change(
        on_spec,
        inputs=[cache_state, design.spec_state, selected],
        outputs=[*shown, *sample],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )
    results.table.select(
        on_select,
        inputs=[cache_state, design.spec_state],
        outputs=[*sample, selected],
        api_visibility="private",
    )
    # New samples replaced the old ones: the old sample's trace would read as one of them.
    cache_state.change(
        lambda: ([], [], None),
        outputs=[*sample, selected],
        api_visibility="private",
        show_progress="hidden",
    )
