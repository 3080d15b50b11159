"""The Playground tab: talk to a run's models side by side.

One prompt (typed, or picked from the run's data), two models (by default the run's starting
model and its final one; any checkpoint of the run, or a model folder the app allows), the
same sampling settings and seed, replies streamed token by token, then each reply scored with
its trace by the run's own reward (as trained; the Design tab's on request), named above them.
The form is carried by name (component -> value); the work is :mod:`ui.playground.replies`'s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.fields import ConfigError, field_help
from engine.generation.playground import MAX_NEW_TOKENS, MAX_SAMPLES
from engine.generation.settings import SamplingSettings, sampling_knob
from engine.run.saved_models import BASE, FINAL
from rewards.completions.text import question_text
from ui.access.identity import Viewer, viewer_for
from ui.design.tab import DesignHandles
from ui.playground.replies import (
    RUN_REWARD,
    SCORING_CHOICES,
    PlaygroundCache,
    PlaygroundError,
    Side,
    compare_stream,
    default_sides,
    model_choices,
    run_choices,
    run_reads,
    run_settings,
    scoring_spec,
)
from ui.shared.context import AppContext
from ui.shared.messages import escape, hint, warn
from ui.shared.named_values import Updates, Values

#: Label of each sampling input, in form order; its range, default and help are the
#: SamplingSettings field's. Temperature and top-p are sliders of this step.
SAMPLING_INPUTS = {
    "temperature": "Temperature",
    "top_p": "top_p",
    "max_new_tokens": "Max new tokens",
    "num_samples": "Samples per model",
    "seed": "Seed",
}
SLIDER_STEP = 0.05
#: The knobs that are whole numbers (gr.Number sends them as floats).
WHOLE = {f.name for f in dataclasses.fields(SamplingSettings) if isinstance(f.default, int)}


@dataclass
class PlaygroundForm:
    """The Playground's inputs and outputs; ``sampling`` maps SamplingSettings fields to
    their inputs."""

    run: gr.Dropdown
    picked: gr.Dropdown
    prompt: gr.Textbox
    answer: gr.State
    rows: gr.State
    left: gr.Dropdown
    left_custom: gr.Textbox
    right: gr.Dropdown
    right_custom: gr.Textbox
    sampling: dict[str, gr.components.Component]
    score_with: gr.Radio
    go: gr.Button
    message: gr.Markdown
    left_out: gr.HTML
    right_out: gr.HTML


def playground_knobs() -> dict[str, dataclasses.Field]:
    """SamplingSettings' fields as the Playground takes them: samples and new tokens capped at
    what one request may ask (``engine.generation.playground``), so the help says so."""
    caps = {"num_samples": MAX_SAMPLES, "max_new_tokens": MAX_NEW_TOKENS}
    return {
        f.name: sampling_knob(f.name, f.default, hi=caps.get(f.name))
        for f in dataclasses.fields(SamplingSettings)
    }


def sampling_input(f: dataclasses.Field, label: str) -> gr.components.Component:
    """The input of SamplingSettings field ``f``: a slider over its range (a float), else a
    whole number; the range shows in its help."""
    bounds = f.metadata["bounds"]
    if isinstance(f.default, float):
        low = bounds.lo + SLIDER_STEP if bounds.lo_open else bounds.lo
        return gr.Slider(
            low, bounds.hi, value=f.default, step=SLIDER_STEP, label=label, info=field_help(f)
        )
    return gr.Number(value=f.default, precision=0, label=label, info=field_help(f))


def build_form() -> PlaygroundForm:
    """The Playground's components, laid out."""
    with gr.Row():
        run = gr.Dropdown(label="Run", choices=[], value=None, elem_id="pg-run")
        picked = gr.Dropdown(
            label="Or pick a prompt from the run's data", choices=[], value=None, elem_id="pg-data"
        )
    prompt = gr.Textbox(label="Prompt", lines=2, elem_id="pg-prompt")
    answer = gr.State(None)
    rows = gr.State([])
    with gr.Row():
        left = gr.Dropdown(label="Left model", choices=[], value=None, elem_id="pg-left")
        left_custom = gr.Textbox(label="Left: folder or hub id (for 'Another model')")
        right = gr.Dropdown(label="Right model", choices=[], value=None, elem_id="pg-right")
        right_custom = gr.Textbox(label="Right: folder or hub id (for 'Another model')")
    knobs = playground_knobs()
    with gr.Row():
        sampling = {
            name: sampling_input(knobs[name], label) for name, label in SAMPLING_INPUTS.items()
        }
    score_with = gr.Radio(
        SCORING_CHOICES, value=RUN_REWARD, label="Score replies with", elem_id="pg-score-with"
    )
    go = gr.Button("Generate", variant="primary", elem_id="pg-generate")
    message = gr.Markdown(elem_id="pg-message")
    with gr.Row():
        left_out = gr.HTML(elem_id="pg-left-out")
        right_out = gr.HTML(elem_id="pg-right-out")
    return PlaygroundForm(
        run=run,
        picked=picked,
        prompt=prompt,
        answer=answer,
        rows=rows,
        left=left,
        left_custom=left_custom,
        right=right,
        right_custom=right_custom,
        sampling=sampling,
        score_with=score_with,
        go=go,
        message=message,
        left_out=left_out,
        right_out=right_out,
    )


def form_settings(form: PlaygroundForm, values: Values) -> SamplingSettings:
    """The sampling settings of the form's values (raises ConfigError naming the knob); an
    emptied seed input is seed 0, as in the Preview."""
    named = {name: values[c] for name, c in form.sampling.items()}
    if named["seed"] is None:
        named["seed"] = 0
    return SamplingSettings(
        **{name: _whole(v) if name in WHOLE else v for name, v in named.items()}
    )


def run_picked(
    ctx: AppContext, cache: PlaygroundCache, form: PlaygroundForm, viewer: Viewer, run_id: Any
) -> Updates:
    """The form once a run is picked: its models on both sides, its data's prompts to pick
    from, and the run's completion length as the max new tokens (what it trained at)."""
    choices = model_choices(ctx, viewer, run_id)
    a, b = default_sides(choices)
    try:
        run = run_reads(ctx, cache, viewer, run_id) if run_id else None
        note = ""
    except PlaygroundError as exc:
        run, note = None, warn(escape(exc))
    found = run.rows if run else []
    picks = [(question_text(r["prompt"])[:120], i) for i, r in enumerate(found)]
    updates: Updates = {
        form.left: gr.Dropdown(choices=choices, value=a),
        form.right: gr.Dropdown(choices=choices, value=b),
        form.picked: gr.Dropdown(choices=picks, value=None),
        form.rows: [
            {"question": question_text(r["prompt"]), "answer": r.get("answer")} for r in found
        ],
        form.message: note,
    }
    if run is not None:
        tokens = run_settings(ctx, run).max_new_tokens
        updates[form.sampling["max_new_tokens"]] = gr.Number(value=tokens)
    return updates


def build_playground(ctx: AppContext, design: DesignHandles, tab: gr.Tab) -> PlaygroundForm:
    cache = PlaygroundCache()
    gr.Markdown(
        "Talk to a run's models: the same prompt, sampling settings and seed for both sides, "
        "replies streamed, then scored with a trace by the reward the run was trained with "
        "(or the Design tab's current one, if you pick it below)."
    )
    form = build_form()

    def on_tab(current: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None):
        choices = run_choices(ctx, viewer_for(request, profile))
        ids = [key for _, key in choices]
        requested = request.query_params.get("run") if request is not None else None
        pick = next((r for r in (current, requested) if r in ids), next(iter(ids), None))
        return gr.Dropdown(choices=choices, value=pick)

    tab.select(on_tab, inputs=form.run, outputs=form.run, api_visibility="private")

    def on_run(
        run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        return run_picked(ctx, cache, form, viewer_for(request, profile), run_id)

    form.run.change(
        on_run,
        inputs=form.run,
        outputs=[
            form.left,
            form.right,
            form.picked,
            form.rows,
            form.message,
            form.sampling["max_new_tokens"],
        ],
        api_visibility="private",
    )

    def on_pick(index: int | None, found: list[dict]):
        if index is None or not isinstance(index, int) or not 0 <= index < len(found):
            return gr.skip(), None
        return found[index]["question"], found[index]["answer"]

    form.picked.change(
        on_pick,
        inputs=[form.picked, form.rows],
        outputs=[form.prompt, form.answer],
        api_visibility="private",
    )
    # typed: no gold answer
    form.prompt.input(lambda: None, outputs=form.answer, api_visibility="private")

    def on_generate(values: Values, request: gr.Request, profile: gr.OAuthProfile | None = None):
        viewer = viewer_for(request, profile)
        run_id = values[form.run]
        try:
            settings = form_settings(form, values)
            sides = (
                Side(values[form.left] or BASE, values[form.left_custom] or ""),
                Side(values[form.right] or FINAL, values[form.right_custom] or ""),
            )
            spec, which = scoring_spec(
                ctx, cache, viewer, run_id, values[form.score_with], values[design.spec_state]
            )
            for left_html, right_html in compare_stream(
                ctx,
                cache,
                viewer,
                run_id,
                sides,
                values[form.prompt],
                values[form.answer],
                settings,
                spec,
            ):
                yield {
                    form.left_out: left_html,
                    form.right_out: right_html,
                    form.message: hint(escape(which)),
                }
        except (PlaygroundError, ConfigError) as exc:
            yield {form.message: warn(escape(exc))}

    form.go.click(
        on_generate,
        inputs={
            form.run,
            form.prompt,
            form.answer,
            form.left,
            form.left_custom,
            form.right,
            form.right_custom,
            *form.sampling.values(),
            form.score_with,
            design.spec_state,
        },
        outputs=[form.left_out, form.right_out, form.message],
        api_visibility="private",
        # one generation at a time across the app, shared with the Preview and /generate: two
        # models streaming per click, and any number of sessions can click
        concurrency_limit=1,
        concurrency_id="generate",
    )
    return form


def _whole(value: Any) -> Any:
    """A form number as an int when it is one (gr.Number sends floats)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
