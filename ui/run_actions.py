"""Actions on a run from the Runs view: stop, resume, delete, downloads, push to the Hub.

Each returns a short message for the page (or raises :class:`RunActionError` with one), so the
Gradio layer only shows what comes back.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from engine.hub import HubPushError, push_model
from engine.launcher import CONFIG_FILE
from engine.worker import latest_model_dir
from storage import runs as run_store
from storage import samples as sample_store
from storage.db import Database
from storage.export import export_run
from storage.runs import RunNotFoundError
from ui.trace_view import completion_html, fmt, trace_columns

logger = logging.getLogger(__name__)


class RunActionError(RuntimeError):
    """An action on a run cannot be done; the message says why and what to do."""


def _require(run_id: str | None) -> str:
    if not run_id:
        raise RunActionError("Pick a run first.")
    return run_id


def _act(launcher: Any, action: str, run_id: str | None, done: str) -> str:
    """Call ``launcher.<action>(run_id)``; any refusal becomes a message naming the run."""
    run_id = _require(run_id)
    try:
        getattr(launcher, action)(run_id)
    except Exception as exc:
        raise RunActionError(f"Cannot {action} {run_id}: {exc}") from exc
    return done.format(run_id=run_id)


def stop_run(launcher: Any, run_id: str | None) -> str:
    return _act(
        launcher,
        "stop",
        run_id,
        "Stopping {run_id}: it finishes its current step, saves a checkpoint, then stops.",
    )


def resume_run(launcher: Any, run_id: str | None) -> str:
    return _act(launcher, "resume", run_id, "Resuming {run_id} from its last checkpoint.")


def delete_run(launcher: Any, run_id: str | None) -> str:
    return _act(launcher, "delete", run_id, "Deleted {run_id} with its metrics, samples and files.")


def run_folder(db: Database, run_id: str | None) -> Path:
    run_id = _require(run_id)
    run = run_store.get_run(db, run_id)
    if run is None:
        raise RunActionError(f"No run with id {run_id!r}.")
    if not run.output_dir:
        raise RunActionError(f"Run {run_id} has no output folder.")
    return Path(run.output_dir)


def config_file(db: Database, run_id: str | None) -> Path:
    """The run's config file (the same one ``python -m engine train`` accepts)."""
    path = run_folder(db, run_id) / CONFIG_FILE
    if not path.is_file():
        raise RunActionError(f"Run {run_id} has no {CONFIG_FILE}.")
    return path


def checkpoint_archive(db: Database, run_id: str | None, into: Path | None = None) -> Path:
    """A zip of the run's final model (or newest checkpoint) for download."""
    folder = run_folder(db, run_id)
    model_dir = latest_model_dir(folder)
    if model_dir is None:
        raise RunActionError(
            f"Run {run_id} has no checkpoint yet; checkpoints are written every "
            "save_steps steps and at the end."
        )
    into = Path(into or tempfile.mkdtemp(prefix="studio-ckpt-"))
    base = into / f"{run_id}-{model_dir.name}"
    return Path(shutil.make_archive(str(base), "zip", root_dir=model_dir))


def run_data_archive(db: Database, run_id: str | None, into: Path | None = None) -> Path:
    """A zip of the run's metrics (CSV), samples with traces (JSONL), logs and config."""
    run_id = _require(run_id)
    into = Path(into or tempfile.mkdtemp(prefix="studio-export-"))
    try:
        exported = export_run(db, run_id, into / f"{run_id}-data")
    except RunNotFoundError:
        raise RunActionError(f"No run with id {run_id!r}.") from None
    return Path(shutil.make_archive(str(exported), "zip", root_dir=exported))


def push_to_hub(db: Database, run_id: str | None, repo_id: str, token: str) -> str:
    """Upload the final model (or newest checkpoint) to a Hub model repo (see engine.hub)."""
    folder = run_folder(db, run_id)
    try:
        url = push_model(folder, repo_id, token)
    except HubPushError as exc:
        raise RunActionError(str(exc)) from None
    return f"Pushed {run_id} to {url}"


def question(prompt: str) -> str:
    """The user's part of a stored prompt (stored as ``role: content`` lines)."""
    at = prompt.rfind("user: ")
    return prompt[at + len("user: ") :] if at >= 0 else prompt


def samples_table(db: Database, run_id: str | None, step: int | None) -> tuple[list[str], list]:
    """Headers and rows of the samples of one step, one column per reward component."""
    if not run_id or step is None:
        return ["prompt", "completion", "total"], []
    rows = sample_store.samples_at(db, run_id, int(step))
    components = trace_columns(r.trace for r in rows)
    headers = ["group", "prompt", "completion", "answer", "total", "advantage", *components, "why"]
    out = []
    for r in rows:
        by_name = {t.get("name"): t for t in r.trace if isinstance(t, dict)}
        out.append(
            [
                r.group,
                question(r.prompt),
                completion_html(r.completion),
                r.answer or "",
                fmt(r.total),
                fmt(r.advantage),
                *[fmt(by_name.get(c, {}).get("raw")) for c in components],
                "; ".join(f"{name}: {t.get('explanation', '')}" for name, t in by_name.items()),
            ]
        )
    return headers, out
