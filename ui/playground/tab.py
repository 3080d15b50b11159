"""The Playground tab: talk to a run's models side by side.

One prompt (typed, or picked from the run's data), two models (by default the run's starting
model and its final one; any checkpoint of the run, or a model folder the app allows), the
same sampling settings and seed, replies streamed token by token, then each reply scored with
its trace by the run's own reward (as trained; the Design tab's on request), named above them.
The work is :mod:`ui.playground.replies`'s.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.generation.playground import GenerateError, SamplingSettings
from engine.run.saved_models import BASE, FINAL
from rewards.completions.text import question_text
from rewards.spec import RewardSpec
from ui.access.identity import viewer_for
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
    scoring_spec,
)
from ui.shared.context import AppContext
from ui.shared.messages import escape, hint, warn


def build_playground(ctx: AppContext, design: DesignHandles, tab: gr.Tab) -> None:
    cache = PlaygroundCache()
    gr.Markdown(
        "Talk to a run's models: the same prompt, sampling settings and seed for both sides, "
        "replies streamed, then scored with a trace by the reward the run was trained with "
        "(or the Design tab's current one, if you pick it below)."
    )
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
    with gr.Row():
        temperature = gr.Slider(0, 2, value=0.8, step=0.05, label="Temperature")
        top_p = gr.Slider(0.05, 1, value=1.0, step=0.05, label="top_p")
        max_new = gr.Number(value=64, precision=0, label="Max new tokens")
        samples = gr.Number(value=2, precision=0, label="Samples per model")
        seed = gr.Number(value=0, precision=0, label="Seed")
    score_with = gr.Radio(
        SCORING_CHOICES, value=RUN_REWARD, label="Score replies with", elem_id="pg-score-with"
    )
    go = gr.Button("Generate", variant="primary", elem_id="pg-generate")
    message = gr.Markdown(elem_id="pg-message")
    with gr.Row():
        left_out = gr.HTML(elem_id="pg-left-out")
        right_out = gr.HTML(elem_id="pg-right-out")

    def on_tab(current: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None):
        choices = run_choices(ctx, viewer_for(request, profile))
        ids = [key for _, key in choices]
        requested = request.query_params.get("run") if request is not None else None
        pick = next((r for r in (current, requested) if r in ids), next(iter(ids), None))
        return gr.Dropdown(choices=choices, value=pick)

    tab.select(on_tab, inputs=run, outputs=run, api_visibility="private")

    def on_run(run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None):
        viewer = viewer_for(request, profile)
        choices = model_choices(ctx, viewer, run_id)
        a, b = default_sides(choices)
        try:
            found = run_reads(ctx, cache, viewer, run_id).rows if run_id else []
            note = ""
        except PlaygroundError as exc:
            found, note = [], warn(escape(exc))
        picks = [(question_text(r["prompt"])[:120], i) for i, r in enumerate(found)]
        return (
            gr.Dropdown(choices=choices, value=a),
            gr.Dropdown(choices=choices, value=b),
            gr.Dropdown(choices=picks, value=None),
            [{"question": question_text(r["prompt"]), "answer": r.get("answer")} for r in found],
            note,
        )

    run.change(
        on_run,
        inputs=run,
        outputs=[left, right, picked, rows, message],
        api_visibility="private",
    )

    def on_pick(index: int | None, found: list[dict]):
        if index is None or not isinstance(index, int) or not 0 <= index < len(found):
            return gr.skip(), None
        return found[index]["question"], found[index]["answer"]

    picked.change(
        on_pick, inputs=[picked, rows], outputs=[prompt, answer], api_visibility="private"
    )
    prompt.input(lambda: None, outputs=answer, api_visibility="private")  # typed: no gold answer

    def on_generate(
        run_id,
        text,
        gold,
        a,
        a_custom,
        b,
        b_custom,
        temp,
        p,
        new,
        n,
        s,
        source: str | None,
        design_spec: RewardSpec | None,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        viewer = viewer_for(request, profile)
        try:
            settings = SamplingSettings(
                temperature=temp,
                top_p=p,
                max_new_tokens=_whole(new),
                num_samples=_whole(n),
                seed=_whole(s),
            )
            sides = (Side(a or BASE, a_custom or ""), Side(b or FINAL, b_custom or ""))
            spec, which = scoring_spec(ctx, cache, viewer, run_id, source, design_spec)
            for left_html, right_html in compare_stream(
                ctx, cache, viewer, run_id, sides, text, gold, settings, spec
            ):
                yield left_html, right_html, hint(escape(which))
        except (PlaygroundError, GenerateError) as exc:
            yield gr.skip(), gr.skip(), warn(escape(exc))

    go.click(
        on_generate,
        inputs=[
            run,
            prompt,
            answer,
            left,
            left_custom,
            right,
            right_custom,
            temperature,
            top_p,
            max_new,
            samples,
            seed,
            score_with,
            design.spec_state,
        ],
        outputs=[left_out, right_out, message],
        api_visibility="private",
        # one generation at a time across the app, shared with the Preview and /generate: two
        # models streaming per click, and any number of sessions can click
        concurrency_limit=1,
        concurrency_id="generate",
    )


def _whole(value: Any) -> Any:
    """A form number as an int when it is one (gr.Number sends floats)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
