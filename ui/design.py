"""The Design tab: compose the reward from the registry's components.

Every component gets an enable switch, a weight, an optional metric name and its parameters, all
generated from :data:`rewards.registry.REGISTRY` through :class:`ui.spec_form.SpecForm`. Loading a
spec that the form cannot show whole is refused, and disabled components are named when loaded
(they are shown unticked and stay out of the spec until ticked). Each edit is validated
at once and a wrong value gets its message right under its input. The valid spec goes into a
``gr.State`` that the Preview and Train tabs read; presets, JSON/YAML import and export, and the
standalone TRL module are here too. "Try it" scores one hand-written completion live.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.params import ParamSpec
from rewards.spec import DEFAULT_PRESET, PRESETS, RewardSpec
from ui import spec_io
from ui.context import AppContext
from ui.messages import escape, hint, warn
from ui.spec_form import DESCRIPTION, GENERAL, FormCheck, Slot, SpecDoesNotFit, SpecForm
from ui.trace_view import fmt

TRY_PROMPT = "What is 17 + 25?"
TRY_COMPLETION = "<think>17 + 25: 7+5=12, carry 1; 1+2+1=4; so 42</think><answer>42</answer>"
TRY_ANSWER = "42"
TRACE_HEADERS = ["component", "raw score", "weight", "contribution", "why"]
TRACE_WIDTHS = ["20%", "11%", "10%", "13%", "46%"]


@dataclass
class DesignHandles:
    """What other tabs read from the Design tab: the current valid spec as a plain dict."""

    spec_state: gr.State
    form: SpecForm


def elem_key(key: str) -> str:
    """An input key as a DOM-friendly id fragment (``rule#2.weight`` -> ``rule-2-weight``)."""
    return key.replace("#", "-").replace(".", "-").replace("_", "-")


def _param_input(slot: Slot, p: ParamSpec, value: Any) -> gr.components.Component:
    common = {"label": p.name.replace("_", " "), "elem_id": elem_key(f"{slot.key}.{p.name}")}
    info = f"{p.doc} ({p.describe_allowed()})"
    if p.type == "bool":
        return gr.Checkbox(value=bool(value), info=p.doc, **common)
    if p.type in ("int", "float"):
        return gr.Number(value=value, precision=0 if p.type == "int" else None, info=info, **common)
    if p.type == "str" and p.choices:
        return gr.Dropdown(choices=list(p.choices), value=value, info=p.doc, **common)
    if p.type == "list":
        return gr.Textbox(
            value=value, lines=3, max_lines=8, info=f"{p.doc}; one per line", **common
        )
    return gr.Textbox(value=value, info=info, **common)


def trace_rows(spec: RewardSpec, prompt: str, completion: str, answer: str) -> tuple[list, str]:
    """Trace table rows and a total line for one completion."""
    scored = score(spec, [prompt or ""], [completion or ""], answers=[answer or None])[0]
    rows = [
        [t.name, fmt(t.raw), fmt(t.weight), fmt(t.contribution), t.explanation]
        for t in scored.trace
    ]
    return rows, f"**Total reward: {fmt(scored.total, 4)}**"


def build_design(ctx: AppContext) -> DesignHandles:
    form = SpecForm()
    initial_spec = PRESETS.get(DEFAULT_PRESET) or next(iter(PRESETS.values()))
    initial = form.values_from_spec(initial_spec)
    spec_state = gr.State(initial_spec.to_dict())

    inputs: list[gr.components.Component] = []
    errors: dict[str, gr.Markdown] = {}

    def error_md(key: str) -> gr.Markdown:
        errors[key] = gr.Markdown(
            "", visible=False, elem_classes="field-error", elem_id=f"error-{elem_key(key)}"
        )
        return errors[key]

    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            with gr.Row():
                preset = gr.Dropdown(
                    label="Preset",
                    choices=list(PRESETS),
                    value=DEFAULT_PRESET if DEFAULT_PRESET in PRESETS else None,
                    scale=3,
                    elem_id="preset",
                )
                load_preset = gr.Button("Load preset", scale=1, elem_id="load-preset")
            status = gr.Markdown(FormCheck(initial_spec).summary(), elem_id="spec-status")
            error_md(GENERAL)
            inputs.append(
                gr.Textbox(
                    value=initial[0],
                    label="Description",
                    placeholder="optional: what this reward is for",
                    lines=1,
                    max_lines=4,
                    elem_id=elem_key(DESCRIPTION),
                )
            )
            error_md(DESCRIPTION)
            at = 1
            for slot in form.slots:
                values = initial[at : at + slot.size]
                at += slot.size
                with (
                    gr.Accordion(slot.label, open=bool(values[0])),
                    gr.Group(),
                ):
                    gr.Markdown(escape(slot.info.description), padding=True)
                    with gr.Row():
                        inputs.append(
                            gr.Checkbox(
                                value=bool(values[0]),
                                label=f"use {slot.label}",
                                elem_id=elem_key(f"{slot.key}.enabled"),
                                scale=1,
                                min_width=120,
                            )
                        )
                        with gr.Column(scale=2, min_width=140):
                            inputs.append(
                                gr.Number(
                                    value=values[1],
                                    label="weight",
                                    elem_id=elem_key(f"{slot.key}.weight"),
                                )
                            )
                            error_md(f"{slot.key}.weight")
                        with gr.Column(scale=3, min_width=180):
                            inputs.append(
                                gr.Textbox(
                                    value=values[2],
                                    label="metric name in charts",
                                    placeholder=f"default: {slot.default_metric_name}",
                                    max_lines=1,
                                    elem_id=elem_key(f"{slot.key}.label"),
                                )
                            )
                            error_md(f"{slot.key}.label")
                    params = list(zip(slot.info.params, values[3:], strict=True))
                    for start in range(0, len(params), 3):
                        with gr.Row():
                            for p, value in params[start : start + 3]:
                                with gr.Column(min_width=200):
                                    inputs.append(_param_input(slot, p, value))
                                    error_md(f"{slot.key}.{p.name}")
                    gr.Markdown(f"<small>Source: {escape(slot.info.source)}</small>", padding=True)
        with gr.Column(scale=2):
            gr.Markdown("### Try it on one completion")
            try_prompt = gr.Textbox(label="Prompt", value=TRY_PROMPT, lines=1)
            try_completion = gr.Textbox(
                label="Completion", value=TRY_COMPLETION, lines=4, elem_id="try-completion"
            )
            try_answer = gr.Textbox(label="Gold answer", value=TRY_ANSWER, lines=1)
            first_rows, first_total = trace_rows(
                initial_spec, TRY_PROMPT, TRY_COMPLETION, TRY_ANSWER
            )
            try_total = gr.Markdown(first_total, elem_id="try-total")
            try_table = gr.Dataframe(
                headers=TRACE_HEADERS,
                value=first_rows,
                interactive=False,
                wrap=True,
                elem_id="try-trace",
                column_widths=TRACE_WIDTHS,
            )
            gr.Markdown("### Import / export")
            export_format = gr.Radio(list(spec_io.FORMATS), value="json", label="Format")
            spec_code = gr.Code(
                value=spec_io.spec_text(initial_spec),
                language="json",
                label="Spec (edit and apply, or paste one)",
                interactive=True,
                elem_id="spec-code",
            )
            with gr.Row():
                apply_code = gr.Button("Apply this spec", size="sm")
                upload = gr.UploadButton(
                    "Import file", file_types=[".json", ".yaml", ".yml"], size="sm"
                )
                export_btn = gr.Button("Prepare downloads", size="sm", elem_id="export-spec")
            import_msg = gr.Markdown(elem_id="import-message")
            downloads = gr.File(
                label="spec JSON, spec YAML, standalone TRL reward module",
                file_count="multiple",
                visible=False,
                interactive=False,
            )

    error_keys = list(errors)
    error_outputs = [errors[k] for k in error_keys]

    def render_check(check: FormCheck, fmt_name: str):
        # While any field is wrong the shared spec is None: Preview keeps its last scores and
        # Train refuses to start, instead of silently using an older reward.
        spec_dict = check.spec.to_dict() if check.ok else None
        code = spec_io.spec_text(check.spec, fmt_name) if check.ok else gr.skip()
        errs = [
            gr.Markdown(value=warn(escape(check.errors.get(k, ""))), visible=k in check.errors)
            for k in error_keys
        ]
        return (spec_dict, check.summary(), code, *errs)

    def on_edit(fmt_name: str, *values):
        return render_check(form.check(values), fmt_name)

    check_outputs = [spec_state, status, spec_code, *error_outputs]
    gr.on(
        [c.input for c in inputs] + [c.blur for c in inputs if isinstance(c, gr.Number)],
        on_edit,
        inputs=[export_format, *inputs],
        outputs=check_outputs,
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )

    load_outputs = [*inputs, *check_outputs, import_msg]

    def refuse(message: str):
        return (*[gr.skip()] * (len(load_outputs) - 1), warn(message))

    def show_spec(spec: RewardSpec, fmt_name: str, message: str, refused: str):
        try:
            values = form.values_from_spec(spec)
        except SpecDoesNotFit as exc:
            return refuse(f"{refused}: {escape(exc)}")
        notes = [hint(escape(note)) for note in form.load_notes(spec)]
        check = form.check(values)
        return (*values, *render_check(check, fmt_name), "\n\n".join([message, *notes]))

    def on_preset(name: str, fmt_name: str):
        if name not in PRESETS:
            return refuse("Pick a preset first.")
        return show_spec(PRESETS[name], fmt_name, f"Loaded preset **{name}**.", "Not loaded")

    load_preset.click(
        on_preset,
        inputs=[preset, export_format],
        outputs=load_outputs,
        api_visibility="private",
    )

    def on_import_text(text: str, fmt_name: str):
        try:
            spec = spec_io.parse_spec(text or "")
        except RewardSpecError as exc:
            return refuse(f"Not applied: {escape(exc)}")
        return show_spec(spec, fmt_name, "Applied the spec.", "Not applied")

    def on_import_file(file: Any, fmt_name: str):
        path = getattr(file, "name", file)
        try:
            spec = spec_io.read_spec_file(path)
        except (RewardSpecError, OSError) as exc:
            return refuse(f"Not imported: {escape(exc)}")
        return show_spec(spec, fmt_name, "Imported the spec file.", "Not imported")

    apply_code.click(
        on_import_text,
        inputs=[spec_code, export_format],
        outputs=load_outputs,
        api_visibility="private",
    )
    upload.upload(
        on_import_file,
        inputs=[upload, export_format],
        outputs=load_outputs,
        api_visibility="private",
    )

    def on_format(spec_dict: dict | None, fmt_name: str):
        if spec_dict is None:
            return gr.Code(language=fmt_name)
        spec = RewardSpec.from_dict(spec_dict)
        return gr.Code(value=spec_io.spec_text(spec, fmt_name), language=fmt_name)

    export_format.change(
        on_format, inputs=[spec_state, export_format], outputs=spec_code, api_visibility="private"
    )

    def on_export(spec_dict: dict | None):
        if spec_dict is None:
            return gr.File(visible=False), warn("Fix the marked fields first.")
        paths = spec_io.export_files(RewardSpec.from_dict(spec_dict))
        return gr.File(value=list(paths), visible=True), ""

    export_btn.click(
        on_export, inputs=spec_state, outputs=[downloads, import_msg], api_visibility="private"
    )

    def on_try(spec_dict: dict | None, prompt: str, completion: str, answer: str):
        if spec_dict is None:
            return gr.skip(), warn("Fix the marked fields to score again.")
        return trace_rows(RewardSpec.from_dict(spec_dict), prompt, completion, answer)

    gr.on(
        [spec_state.change, try_prompt.input, try_completion.input, try_answer.input],
        on_try,
        inputs=[spec_state, try_prompt, try_completion, try_answer],
        outputs=[try_table, try_total],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )
    return DesignHandles(spec_state=spec_state, form=form)
