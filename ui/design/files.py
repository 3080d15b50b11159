"""The Design tab's import/export box: the spec as JSON or YAML text, and downloads of the spec
files and a standalone TRL reward module."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from rewards.spec import RewardSpec
from ui.design import spec_io
from ui.shared.messages import warn


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


def build_spec_io(initial_spec: RewardSpec) -> SpecIoParts:
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


def wire_spec_io(io: SpecIoParts, spec_state: gr.State) -> None:
    """Show the spec in the chosen format; build the download files."""

    def on_format(spec: RewardSpec | None, fmt_name: str):
        if spec is None:
            return gr.Code(language=fmt_name)
        return gr.Code(value=spec_io.spec_text(spec, fmt_name), language=fmt_name)

    io.export_format.change(
        on_format, inputs=[spec_state, io.export_format], outputs=io.code, api_visibility="private"
    )

    def on_export(spec: RewardSpec | None):
        if spec is None:
            return gr.File(visible=False), warn("Fix the marked fields first.")
        paths = spec_io.export_files(spec)
        return gr.File(value=list(paths), visible=True), ""

    # In the form's queue: the spec exported is the one of every edit made before the click
    # (the editor's changes take the files of an older spec away; see ui.design.tab).
    io.export.click(
        on_export,
        inputs=spec_state,
        outputs=[io.downloads, io.message],
        api_visibility="private",
        concurrency_id="design-form",
        concurrency_limit=1,
    )
