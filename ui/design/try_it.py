"""The Design tab's "Try it" column: one hand-written completion scored live with the current
spec, its trace as a table (the same columns the Preview and Playground traces use)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gradio as gr
from gradio.events import Dependency

from rewards.composer import score
from rewards.spec import RewardSpec
from ui.shared.messages import escape, warn
from ui.shared.trace_view import cut_note, fmt

PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}
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


# While a new score is on its way the old one is dimmed and says so (on a busy server the
# previous spec's result stood for up to 14 s, looking current). A data attribute, not a class:
# Gradio rewrites the block's classes when it redraws it.
MARK_PENDING = "() => { document.querySelector('#try-total')?.setAttribute('data-pending', ''); }"
CLEAR_PENDING = "() => { document.querySelector('#try-total')?.removeAttribute('data-pending'); }"
PENDING_CSS = """#try-total[data-pending] { opacity: 0.5; }
#try-total[data-pending]::after { content: "scoring with the new reward…"; font-size: 0.85em; }"""


def wire_try(
    parts: TryParts, spec_state: gr.State, checked: Dependency, starts: Sequence[Callable]
) -> None:
    """Score the hand-written completion again after each check of the spec (``checked``,
    the editor's change event: it always completes, where the spec's own change does not fire
    for an equal spec) and whenever the completion's fields change; ``starts`` (the loaders'
    clicks, the editor's change) mark the shown score pending until the new one lands."""

    def on_try(spec: RewardSpec | None, prompt: str, completion: str, answer: str):
        if spec is None:
            return gr.skip(), warn("Fix the marked fields to score again.")
        return trace_rows(spec, prompt, completion, answer)

    fields = [parts.prompt, parts.completion, parts.answer]
    for start in [*starts, *(f.input for f in fields)]:
        start(None, js=MARK_PENDING, **PRIVATE)
    scoring = {
        "fn": on_try,
        "inputs": [spec_state, *fields],
        "outputs": [parts.table, parts.total],
        "show_progress": "hidden",
        "api_visibility": "private",
    }
    checked.then(**scoring).then(None, js=CLEAR_PENDING, **PRIVATE)
    gr.on([f.input for f in fields], **scoring, trigger_mode="always_last").then(
        None, js=CLEAR_PENDING, **PRIVATE
    )
