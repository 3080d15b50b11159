"""The Design tab's "Try it" column: one hand-written completion scored live with the current
spec, its trace as a table (the same columns the Preview and Playground traces use)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from rewards.composer import score
from rewards.spec import RewardSpec
from ui.shared.messages import escape, warn
from ui.shared.trace_view import cut_note, fmt

TRY_PROMPT = "What is 17 + 25?"
TRY_COMPLETION = "<think>17 + 25: 7+5=12, carry 1; 1+2+1=4; so 42</think><answer>42</answer>"
TRY_ANSWER = "42"
TRACE_HEADERS = ["component", "raw score", "weight", "contribution", "why"]
TRACE_WIDTHS = ["19%", "14%", "14%", "25%", "28%"]  # each header whole beside its menu button


def trace_rows(spec: RewardSpec, prompt: str, completion: str, answer: str) -> tuple[list, str]:
    """Trace table rows and a total line for one completion."""
    scored = score(spec, [prompt or ""], [completion or ""], answers=[answer or None])[0]
    rows = [
        [t.name, fmt(t.raw), fmt(t.weight), fmt(t.contribution), t.explanation]
        for t in scored.trace
    ]
    total = f"**Total reward: {fmt(scored.total, 4)}**"
    note = cut_note(completion or "")
    return rows, total + (f"\n\n{warn(escape(note))}" if note else "")


@dataclass
class TryParts:
    """The "Try it" column: one hand-written completion scored with the current spec."""

    prompt: gr.Textbox
    completion: gr.Textbox
    answer: gr.Textbox
    total: gr.Markdown
    table: gr.Dataframe


def build_try(initial_spec: RewardSpec) -> TryParts:
    gr.Markdown("### Try it on one completion")
    prompt = gr.Textbox(label="Prompt", value=TRY_PROMPT, lines=1)
    completion = gr.Textbox(
        label="Completion", value=TRY_COMPLETION, lines=4, elem_id="try-completion"
    )
    answer = gr.Textbox(label="Gold answer", value=TRY_ANSWER, lines=1)
    first_rows, first_total = trace_rows(initial_spec, TRY_PROMPT, TRY_COMPLETION, TRY_ANSWER)
    total = gr.Markdown(first_total, elem_id="try-total")
    table = gr.Dataframe(
        headers=TRACE_HEADERS,
        value=first_rows,
        interactive=False,
        wrap=True,
        elem_id="try-trace",
        column_widths=TRACE_WIDTHS,
    )
    return TryParts(prompt, completion, answer, total, table)


def wire_try(parts: TryParts, spec_state: gr.State) -> None:
    """Score the hand-written completion again whenever it or the spec changes."""

    def on_try(spec: RewardSpec | None, prompt: str, completion: str, answer: str):
        if spec is None:
            return gr.skip(), warn("Fix the marked fields to score again.")
        return trace_rows(spec, prompt, completion, answer)

    gr.on(
        [spec_state.change, parts.prompt.input, parts.completion.input, parts.answer.input],
        on_try,
        inputs=[spec_state, parts.prompt, parts.completion, parts.answer],
        outputs=[parts.table, parts.total],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )
