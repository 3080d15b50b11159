"""The Design tab: compose the reward from the registry's components.

Every component instance gets an enable switch, a weight, an optional metric name and its
parameters, all generated from :data:`rewards.registry.REGISTRY` through
:class:`ui.spec_form.SpecForm` and drawn on demand by :mod:`ui.design_editor`. Loading a spec that
the form cannot show whole is refused, and disabled components are named when loaded
(they are shown unticked and stay out of the spec until ticked). Each edit is validated
at once and a wrong value gets its message right under its input. The valid spec goes into a
``gr.State`` that the Preview and Train tabs read; presets, JSON/YAML import and export, and the
standalone TRL module are here too. "Try it" scores one hand-written completion live.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.spec import DEFAULT_PRESET, PRESETS, RewardSpec
from ui import spec_io
from ui.context import AppContext
from ui.design_editor import EditorTargets, build_editor, layout_of
from ui.design_editor import elem_key as elem_key  # the Train tab's error ids use it too
from ui.messages import escape, hint, warn
from ui.named import Updates, Values
from ui.spec_form import FormCheck, SpecDoesNotFit, SpecForm
from ui.trace_view import cut_note, fmt

TRY_PROMPT = "What is 17 + 25?"
TRY_COMPLETION = "<think>17 + 25: 7+5=12, carry 1; 1+2+1=4; so 42</think><answer>42</answer>"
TRY_ANSWER = "42"
TRACE_HEADERS = ["component", "raw score", "weight", "contribution", "why"]
TRACE_WIDTHS = ["19%", "14%", "12%", "17%", "38%"]  # headers fit on one line


@dataclass
class DesignHandles:
    """What other tabs read from the Design tab: the current valid spec as a plain dict."""

    spec_state: gr.State
    form: SpecForm


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


@dataclass
class SpecIoParts:
    """Import and export of the spec as text and files."""

    export_format: gr.Radio
    code: gr.Code
    apply: gr.Button
    upload: gr.UploadButton
    export: gr.Button
    message: gr.Markdown
    downloads: gr.File


def _build_try(initial_spec: RewardSpec) -> TryParts:
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


def _build_spec_io(initial_spec: RewardSpec) -> SpecIoParts:
    gr.Markdown("### Import / export")
    export_format = gr.Radio(list(spec_io.FORMATS), value="json", label="Format")
    code = gr.Code(
        value=spec_io.spec_text(initial_spec),
        language="json",
        label="Spec (edit and apply, or paste one)",
        interactive=True,
        elem_id="spec-code",
    )
    with gr.Row():
        apply = gr.Button("Apply this spec", size="sm")
        upload = gr.UploadButton("Import file", file_types=[".json", ".yaml", ".yml"], size="sm")
        export = gr.Button("Prepare downloads", size="sm", elem_id="export-spec")
    message = gr.Markdown(elem_id="import-message")
    downloads = gr.File(
        label="spec JSON, spec YAML, standalone TRL reward module",
        file_count="multiple",
        visible=False,
        interactive=False,
    )
    return SpecIoParts(export_format, code, apply, upload, export, message, downloads)


def _build_presets() -> tuple[gr.Dropdown, gr.Button]:
    with gr.Row():
        preset = gr.Dropdown(
            label="Preset",
            choices=list(PRESETS),
            value=DEFAULT_PRESET if DEFAULT_PRESET in PRESETS else None,
            scale=3,
            elem_id="preset",
        )
        load_preset = gr.Button("Load preset", scale=1, elem_id="load-preset")
    return preset, load_preset


def _wire_loaders(
    form: SpecForm,
    out: EditorTargets,
    io: SpecIoParts,
    preset: gr.Dropdown,
    load_preset: gr.Button,
) -> None:
    """Load presets, pasted specs and files into the editor (it draws them whole)."""

    def refuse(message: str) -> Updates:
        return {out.message: warn(message)}

    def show_spec(spec: RewardSpec, raw: Values, message: str, refused: str) -> Updates:
        try:
            values = form.values_from_spec(spec)
        except SpecDoesNotFit as exc:
            return refuse(f"{refused}: {escape(exc)}")
        notes = [hint(escape(note)) for note in form.load_notes(spec)]
        text = "\n\n".join([message, *notes])
        return out.redraw(form, values, raw[out.layout], raw[out.export_format], text)

    def on_preset(raw: Values) -> Updates:
        name = raw[preset]
        if name not in PRESETS:
            return refuse("Pick a preset first.")
        return show_spec(PRESETS[name], raw, f"Loaded preset **{name}**.", "Not loaded")

    def on_import_text(raw: Values) -> Updates:
        try:
            spec = spec_io.parse_spec(raw[io.code] or "")
        except RewardSpecError as exc:
            return refuse(f"Not applied: {escape(exc)}")
        return show_spec(spec, raw, "Applied the spec.", "Not applied")

    def on_import_file(raw: Values) -> Updates:
        file = raw[io.upload]
        path = getattr(file, "name", file)
        try:
            spec = spec_io.read_spec_file(path)
        except (RewardSpecError, OSError) as exc:
            return refuse(f"Not imported: {escape(exc)}")
        return show_spec(spec, raw, "Imported the spec file.", "Not imported")

    for trigger, handler, source in (
        (load_preset.click, on_preset, preset),
        (io.apply.click, on_import_text, io.code),
        (io.upload.upload, on_import_file, io.upload),
    ):
        trigger(
            handler,
            inputs={source, out.layout, out.export_format},
            outputs=out.redraw_outputs,
            api_visibility="private",
        )


def _wire_spec_io(io: SpecIoParts, spec_state: gr.State) -> None:
    """Show the spec in the chosen format; build the download files."""

    def on_format(spec_dict: dict | None, fmt_name: str):
        if spec_dict is None:
            return gr.Code(language=fmt_name)
        spec = RewardSpec.from_dict(spec_dict)
        return gr.Code(value=spec_io.spec_text(spec, fmt_name), language=fmt_name)

    io.export_format.change(
        on_format, inputs=[spec_state, io.export_format], outputs=io.code, api_visibility="private"
    )

    def on_export(spec_dict: dict | None):
        if spec_dict is None:
            return gr.File(visible=False), warn("Fix the marked fields first.")
        paths = spec_io.export_files(RewardSpec.from_dict(spec_dict))
        return gr.File(value=list(paths), visible=True), ""

    io.export.click(
        on_export,
        inputs=spec_state,
        outputs=[io.downloads, io.message],
        api_visibility="private",
    )


def _wire_try(parts: TryParts, spec_state: gr.State) -> None:
    """Score the hand-written completion again whenever it or the spec changes."""

    def on_try(spec_dict: dict | None, prompt: str, completion: str, answer: str):
        if spec_dict is None:
            return gr.skip(), warn("Fix the marked fields to score again.")
        return trace_rows(RewardSpec.from_dict(spec_dict), prompt, completion, answer)

    gr.on(
        [spec_state.change, parts.prompt.input, parts.completion.input, parts.answer.input],
        on_try,
        inputs=[spec_state, parts.prompt, parts.completion, parts.answer],
        outputs=[parts.table, parts.total],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )


def build_design(ctx: AppContext) -> DesignHandles:
    form = SpecForm()
    initial_spec = PRESETS.get(DEFAULT_PRESET) or next(iter(PRESETS.values()))
    spec_state = gr.State(initial_spec.to_dict())
    layout = gr.State(layout_of(form.values_from_spec(initial_spec)))
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            preset, load_preset = _build_presets()
            status = gr.Markdown(FormCheck(initial_spec).summary(), elem_id="spec-status")
            editor = gr.Column()
        with gr.Column(scale=2):
            try_parts = _build_try(initial_spec)
            io = _build_spec_io(initial_spec)
    out = EditorTargets(layout, spec_state, status, io.code, io.export_format, io.message)
    with editor:
        build_editor(form, out)
    _wire_loaders(form, out, io, preset, load_preset)
    _wire_spec_io(io, spec_state)
    _wire_try(try_parts, spec_state)
    return DesignHandles(spec_state=spec_state, form=form)
