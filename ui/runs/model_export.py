"""The Runs view's model export: a format picker and a button that builds a download.

The archive is made into a fresh temporary folder for the run's owner
(``ui.shared.downloads.download_dir``), never served from the data dir, like the other downloads. An
archive is reused while that folder is kept (an hour) for the same run model, format and
weights: each build writes a whole model to disk twice (there and in Gradio's cache), so asking
again and again must not fill the disk.
"""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict
from pathlib import Path

import gradio as gr

from engine.config.run_config import RunConfig
from engine.exports.gguf_file import QUANTS, GGUFExportError
from engine.exports.run_export import FORMATS, ExportError, export_recorded_run
from engine.run.saved_models import RunModelError, run_models
from storage.runs import RunInfo
from storage.sqlite.db import Database
from ui.access.identity import Viewer, viewer_for
from ui.runs.actions import RunActionError, owned_run
from ui.shared.downloads import download_dir
from ui.shared.messages import escape, ok, warn

FORMAT_LABELS = {
    "hf": "Hugging Face folder (as trained)",
    "merged": "Merged transformers model (LoRA merged)",
    "gguf": "GGUF (llama.cpp, LM Studio)",
    "ollama": "Ollama (GGUF + Modelfile)",
}
#: Archives remembered for reuse (the oldest forgotten first).
KEEP_ARCHIVES = 256
_archives: OrderedDict[tuple, tuple[Path, str]] = OrderedDict()
_archives_lock = threading.Lock()


def _archive_key(run: RunInfo, fmt: str, quant: str) -> tuple:
    """What an archive depends on: the run's newest model (by its folder's time), the format
    and, for GGUF files, the weights' type."""
    run_id = run.id
    try:
        newest = run_models(Path(run.output_dir), RunConfig.from_dict(run.config))[-1]
        stamp = newest.path.stat().st_mtime_ns if newest.path is not None else 0
    except (OSError, RunModelError, ValueError):
        stamp = None  # unreadable: build (and report) rather than reuse
    return run_id, stamp, fmt, quant if fmt in ("gguf", "ollama") else ""


def _reusable(key: tuple) -> tuple[Path, str] | None:
    with _archives_lock:
        found = _archives.get(key)
    return found if key[1] is not None and found and found[0].is_file() else None


def _remember(key: tuple, archive: Path, command: str) -> None:
    with _archives_lock:
        _archives[key] = (archive, command)
        _archives.move_to_end(key)
        while len(_archives) > KEEP_ARCHIVES:
            _archives.popitem(last=False)


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
    key = _archive_key(run, fmt, quant)
    if into is None and (found := _reusable(key)) is not None:
        return found
    into = Path(into or download_dir())
    try:
        result = export_recorded_run(
            db, run.id, Path(run.output_dir), into / f"{run.id}-{fmt}", fmt, quant=quant
        )
    except (ExportError, GGUFExportError) as exc:
        raise RunActionError(f"Cannot export {run.id}: {exc}") from None
    archive = shutil.make_archive(str(result.folder), "zip", root_dir=result.folder)
    shutil.rmtree(result.folder, ignore_errors=True)
    _remember(key, Path(archive), result.command)
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

    # An export belongs to the run it was made of: another run opened takes it away.
    run_select.change(
        lambda: (gr.File(value=None, visible=False), ""),
        outputs=[download, message],
        api_visibility="private",
        show_progress="hidden",
    )
    button.click(
        export,
        inputs=[run_select, fmt, quant],
        outputs=[download, message],
        api_visibility="private",
        concurrency_limit=1,
        concurrency_id="export_model",
    )
