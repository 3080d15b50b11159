"""The Preview tab's parts, laid out: the model, data and sampling inputs on the left
(:class:`PreviewControls`), the scores, trace and probes on the right (:class:`PreviewResults`);
:mod:`ui.preview.tab` wires their events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.fields import field_help
from ui.design.tab import TRACE_HEADERS, TRACE_WIDTHS
from ui.preview.generate import PreviewRequest, model_choices, unavailable_models_note
from ui.preview.tools_input import build_tools_input
from ui.shared.context import AppContext
from ui.shared.data_inputs import DataInputs, build_data_inputs
from ui.shared.named_values import error_line

PROBE_HEADERS = ["probe", "total", "change", "components that moved", "verdict"]


@dataclass
class PreviewControls:
    """The left column: model, data and sampling inputs, each with its error line."""

    model_key: gr.Dropdown
    custom_model: gr.Textbox
    refresh_models: gr.Button
    data: DataInputs
    tools: gr.CheckboxGroup
    sampling: dict[str, gr.Number]  # PreviewRequest field -> its input
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


#: Label and element id of each sampling knob's input (its range, default and help are the
#: PreviewRequest field's).
SAMPLING_INPUTS = {
    "num_prompts": ("Prompts", "preview-prompts"),
    "samples_per_prompt": ("Samples per prompt", "preview-samples"),
    "temperature": ("Temperature", "preview-temperature"),
    "max_new_tokens": ("Max new tokens", "preview-max-tokens"),
    "seed": ("Seed", "preview-seed"),
}


def build_preview_controls(ctx: AppContext) -> PreviewControls:
    """The left column: model, data and sampling inputs, each with its error line."""
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
    tools = build_tools_input()
    error_md("tools")
    gr.Markdown("### Sampling")
    knobs = PreviewRequest.sampling_fields()
    sampling: dict[str, gr.Number] = {}
    for at in range(0, len(knobs), 2):  # two inputs a row, each with its error line under it
        with gr.Row():
            for f in knobs[at : at + 2]:
                label, elem_id = SAMPLING_INPUTS[f.name]
                with gr.Column(min_width=120):
                    sampling[f.name] = gr.Number(
                        label=label,
                        value=f.default,
                        precision=0 if isinstance(f.default, int) else None,
                        info=field_help(f),
                        elem_id=elem_id,
                    )
                    error_md(f.name)
    generate = gr.Button("Generate", variant="primary", elem_id="preview-generate")
    return PreviewControls(
        model_key=model_key,
        custom_model=custom_model,
        refresh_models=refresh_models,
        data=data,
        tools=tools,
        sampling=sampling,
        generate=generate,
        errors=errors,
    )


def _read_only_table(headers: list[str], elem_id: str, **options: Any) -> gr.Dataframe:
    """An empty, wrapped table the handlers fill; the user reads it, never edits it."""
    return gr.Dataframe(
        headers=headers, value=[], interactive=False, wrap=True, elem_id=elem_id, **options
    )


def build_results() -> PreviewResults:
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
