"""The Runs view's model export: a format picker and a button that builds a download.

The archive is made per request into a fresh temporary folder for the run's owner
(``ui.run_actions.download_dir``), never served from the data dir, like the other downloads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gradio as gr

from engine.exports.gguf_file import QUANTS, GGUFExportError
from engine.exports.run_export import FORMATS, ExportError, export_recorded_run
from storage.db import Database
from ui.identity import Viewer, viewer_for
from ui.messages import escape, ok, warn
from ui.run_actions import RunActionError, download_dir, owned_run

FORMAT_LABELS = {
    "hf": "Hugging Face folder (as trained)",
    "merged": "Merged transformers model (LoRA merged)",
    "gguf": "GGUF (llama.cpp, LM Studio)",
    "ollama": "Ollama (GGUF + Modelfile)",
}


def model_export_archive(
    db: Database,
    viewer: Viewer,
    run_id: str | None,
    fmt: str,
    quant: str = "F16",
    into: Path | None = None,
) -> tuple[Path, str]:
    """A zip of the run's model in ``fmt`` and the command that runs it (Ollama), for the
    viewer's own run."""
    run = owned_run(db, viewer, run_id)
    if fmt not in FORMATS:
        raise RunActionError(f"format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if quant not in QUANTS:
        raise RunActionError(f"quant: must be one of {', '.join(QUANTS)}, got {quant!r}")
    if not run.output_dir:
        raise RunActionError(f"Run {run.id} has no output folder.")
    into = Path(into or download_dir())
    try:
        result = export_recorded_run(
            db, run.id, Path(run.output_dir), into / f"{run.id}-{fmt}", fmt, quant=quant
        )
    except (ExportError, GGUFExportError) as exc:
        raise RunActionError(f"Cannot export {run.id}: {exc}") from None
    archive = shutil.make_archive(str(result.folder), "zip", root_dir=result.folder)
    shutil.rmtree(result.folder, ignore_errors=True)
    return Path(archive), result.command


def build_model_export(ctx, run_select: gr.Dropdown) -> None:
    """The export part of the Runs view, wired to its run picker."""
    with gr.Accordion("Export the model (Hugging Face, merged, GGUF, Ollama)", open=False):
        with gr.Row():
            fmt = gr.Dropdown(
                label="Format",
                choices=[(label, key) for key, label in FORMAT_LABELS.items()],
                value="merged",
                elem_id="export-format",
            )
            quant = gr.Dropdown(label="GGUF weights", choices=list(QUANTS), value="F16")
            button = gr.Button("Export model (zip)", size="sm", elem_id="export-model")
        message = gr.Markdown(elem_id="export-message")
        download = gr.File(
            label="Model download", visible=False, interactive=False, elem_id="export-download"
        )

    def export(
        run_id: str | None,
        key: str,
        q: str,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        try:
            path, command = model_export_archive(
                ctx.db, viewer_for(request, profile), run_id, key, q
            )
        except RunActionError as exc:
            return gr.File(visible=False), warn(escape(exc))
        note = f"Exported. Unzip it, then in that folder: `{command}`" if command else "Exported."
        return gr.File(value=str(path), visible=True), ok(escape(note))

    button.click(
        export,
        inputs=[run_select, fmt, quant],
        outputs=[download, message],
        api_visibility="private",
        concurrency_limit=1,
        concurrency_id="export_model",
    )
