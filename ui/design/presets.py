"""The Design tab's loaders: presets, a pasted spec and a spec file, each drawn whole by the
component editor (or refused with the reason, the form left as it was)."""

from __future__ import annotations

import gradio as gr

from rewards.errors import RewardSpecError
from rewards.spec import DEFAULT_PRESET, PRESETS, RewardSpec
from ui.design import spec_io
from ui.design.editor import FORM_QUEUE, EditorTargets
from ui.design.files import SpecIoParts
from ui.design.spec_form import SpecDoesNotFit, SpecForm
from ui.shared.messages import escape, hint, warn
from ui.shared.named_values import Updates, Values


def build_presets() -> tuple[gr.Dropdown, gr.Button]:
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


def show_spec(
    form: SpecForm, out: EditorTargets, spec: RewardSpec, message: str, refused: str
) -> Updates:
    """Updates that draw ``spec`` whole in the editor, or only say why not (the form left as
    it was)."""
    try:
        values = form.values_from_spec(spec)
    except SpecDoesNotFit as exc:
        return {out.message: warn(f"{refused}: {escape(exc)}")}
    notes = [hint(escape(note)) for note in form.load_notes(spec)]
    text = "\n\n".join([message, *notes])
    return out.show(values, text, preset_of(spec))


def preset_of(spec: RewardSpec) -> str | None:
    """The name of the preset ``spec`` is, or None when it is no preset as it stands."""
    return next((name for name, preset in PRESETS.items() if preset == spec), None)


def wire_loaders(
    form: SpecForm,
    out: EditorTargets,
    io: SpecIoParts,
    preset: gr.Dropdown,
    load_preset: gr.Button,
) -> None:
    """Load presets, pasted specs and files into the editor (it draws them whole)."""

    def refuse(message: str) -> Updates:
        return {out.message: warn(message)}

    def on_preset(raw: Values) -> Updates:
        name = raw[preset]
        if name not in PRESETS:
            return refuse("Pick a preset first.")
        return show_spec(form, out, PRESETS[name], f"Loaded preset **{name}**.", "Not loaded")

    def on_import_text(raw: Values) -> Updates:
        try:
            spec = spec_io.parse_spec(raw[io.code] or "")
        except RewardSpecError as exc:
            return refuse(f"Not applied: {escape(exc)}")
        return show_spec(form, out, spec, "Applied the spec.", "Not applied")

    def on_import_file(raw: Values) -> Updates:
        file = raw[io.upload]
        path = getattr(file, "name", file)
        try:
            spec = spec_io.read_spec_file(path)
        except (RewardSpecError, OSError) as exc:
            return refuse(f"Not imported: {escape(exc)}")
        return show_spec(form, out, spec, "Imported the spec file.", "Not imported")

    for trigger, handler, source in (
        (load_preset.click, on_preset, preset),
        (io.apply.click, on_import_text, io.code),
        (io.upload.upload, on_import_file, io.upload),
    ):
        trigger(
            handler,
            inputs={source},
            outputs=out.load_outputs,
            api_visibility="private",
            **FORM_QUEUE,
        )
