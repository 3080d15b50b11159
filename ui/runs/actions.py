"""Actions on a run from the Runs view: stop, resume, delete, downloads, push to the Hub.

Each returns a short message for the page (or raises :class:`RunActionError` with one), so the
Gradio layer only shows what comes back. Each takes the :class:`~ui.access.identity.Viewer` behind
the event and acts only on that viewer's runs (an admin's: any run); another user's run reads like
a missing one. Downloads are built per request into a fresh temporary folder, never served from
the data dir.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from engine.exports.hub import HubPushError, push_model
from engine.runtime.checkpoints import latest_model_dir
from engine.runtime.layout import CONFIG_FILE
from storage import runs as run_store
from storage.export import config_yaml, export_run
from storage.records import samples as sample_store
from storage.runs import RunInfo, RunNotFoundError
from storage.sqlite.db import Database
from storage.sqlite.schema import Sample
from ui.access.identity import Viewer
from ui.access.run_slots import AddressRunSlots
from ui.runs.sample_groups import SHOW_ALL, shown_samples
from ui.shared.conversation_view import completion_view
from ui.shared.downloads import download_dir
from ui.shared.trace_view import fmt, trace_columns

logger = logging.getLogger(__name__)


class RunActionError(RuntimeError):
    """An action on a run cannot be done; the message says why and what to do."""


def _require(run_id: str | None) -> str:
    if not run_id:
        raise RunActionError("Pick a run first.")
    if not isinstance(run_id, str):
        raise RunActionError(f"run_id: expected a run id (text), got {type(run_id).__name__}.")
    return run_id


def owned_run(db: Database, viewer: Viewer, run_id: str | None) -> RunInfo:
    """The run if ``viewer`` may see it; another user's run reads like a missing one."""
    run_id = _require(run_id)
    run = run_store.get_run(db, run_id, owner=viewer.scope)
    if run is None:
        raise RunActionError(f"No run with id {run_id!r}.")
    return run


def _act(
    db: Database,
    launcher: Any,
    viewer: Viewer,
    action: str,
    run_id: str | None,
    done: str,
    **options: Any,
) -> str:
    """Call ``launcher.<action>(run_id, **options)`` on a run of ``viewer``; any refusal
    becomes a message naming the run."""
    run_id = owned_run(db, viewer, run_id).id
    try:
        getattr(launcher, action)(run_id, **options)
    except Exception as exc:
        raise RunActionError(f"Cannot {action} {run_id}: {exc}") from exc
    return done.format(run_id=run_id)


def stop_run(db: Database, launcher: Any, viewer: Viewer, run_id: str | None) -> str:
    return _act(
        db,
        launcher,
        viewer,
        "stop",
        run_id,
        "Stopping {run_id}: it finishes its current step, saves a checkpoint, then stops.",
    )


def resume_run(
    db: Database,
    launcher: Any,
    viewer: Viewer,
    run_id: str | None,
    slots: AddressRunSlots | None = None,
) -> str:
    """Queue the viewer's run again, within the viewer's caps and, with ``slots``, its
    address's (as a new run of theirs)."""
    run_id = owned_run(db, viewer, run_id).id

    def resume() -> str:
        launcher.resume(run_id, caps=viewer.caps)
        return run_id

    try:
        if slots is None:
            resume()
        else:
            slots.start(viewer.address, resume)
    except Exception as exc:
        raise RunActionError(f"Cannot resume {run_id}: {exc}") from exc
    return f"Resuming {run_id} from its last checkpoint."


def check_deletable(run: RunInfo) -> None:
    """Refuse, before any undo window starts, to delete a run that is still going."""
    if not run.is_terminal:
        raise RunActionError(f"Run {run.id} is {run.status}; stop it before deleting it.")


def delete_run(db: Database, launcher: Any, viewer: Viewer, run_id: str | None) -> str:
    return _act(
        db,
        launcher,
        viewer,
        "delete",
        run_id,
        "Deleted {run_id} with its metrics, samples and files.",
    )


def run_folder(db: Database, viewer: Viewer, run_id: str | None) -> Path:
    run = owned_run(db, viewer, run_id)
    if not run.output_dir:
        raise RunActionError(f"Run {run.id} has no output folder.")
    return Path(run.output_dir)


def config_file(db: Database, viewer: Viewer, run_id: str | None, into: Path | None = None) -> Path:
    """The run's recorded config as a file ``python -m engine train`` accepts."""
    folder = run_folder(db, viewer, run_id)  # as every download: a run with no folder has none
    copy = Path(into or download_dir()) / f"{folder.name}-{CONFIG_FILE}"
    copy.write_text(config_yaml(owned_run(db, viewer, run_id).config), encoding="utf-8")
    return copy


def checkpoint_archive(
    db: Database, viewer: Viewer, run_id: str | None, into: Path | None = None
) -> Path:
    """A zip of the run's final model (or newest checkpoint) for download."""
    folder = run_folder(db, viewer, run_id)
    model_dir = latest_model_dir(folder)
    if model_dir is None:
        raise RunActionError(
            f"Run {run_id} has no checkpoint yet; checkpoints are written every "
            "save_steps steps and at the end."
        )
    base = Path(into or download_dir()) / f"{run_id}-{model_dir.name}"
    return Path(shutil.make_archive(str(base), "zip", root_dir=model_dir))


def run_data_archive(
    db: Database, viewer: Viewer, run_id: str | None, into: Path | None = None
) -> Path:
    """A zip of the run's metrics (CSV), samples with traces (JSONL), logs and config."""
    run_id = owned_run(db, viewer, run_id).id
    into = Path(into or download_dir())
    try:
        exported = export_run(db, run_id, into / f"{run_id}-data")
    except RunNotFoundError:
        raise RunActionError(f"No run with id {run_id!r}.") from None
    return Path(shutil.make_archive(str(exported), "zip", root_dir=exported))


def push_to_hub(db: Database, viewer: Viewer, run_id: str | None, repo_id: str, token: str) -> str:
    """Upload the final model (or newest checkpoint) to a Hub model repo (engine.exports.hub)."""
    folder = run_folder(db, viewer, run_id)
    config = owned_run(db, viewer, run_id).config
    try:
        url = push_model(folder, repo_id, token, config_text=config_yaml(config))
    except HubPushError as exc:
        raise RunActionError(str(exc)) from None
    return f"Pushed {run_id} to {url}"


def question(prompt: str) -> str:
    """The user's part of a stored prompt (stored as ``role: content`` lines)."""
    at = prompt.rfind("user: ")
    return prompt[at + len("user: ") :] if at >= 0 else prompt


NO_SAMPLES = (["prompt", "completion", "total"], [])


def step_samples(
    db: Database, viewer: Viewer, run_id: str | None, step: Any
) -> tuple[list[Sample], RunInfo | None]:
    """The samples of one step of a run of ``viewer``, and the run (``[], None`` for no run,
    another user's, or a step that is not a number)."""
    if not run_id or step is None:
        return [], None
    try:
        run = owned_run(db, viewer, run_id)
        step = int(step)
    except (RunActionError, TypeError, ValueError, OverflowError):
        return [], None
    return sample_store.samples_at(db, run.id, step), run


def max_tokens(run: RunInfo | None) -> int | None:
    """The run's completion limit in tokens (what a truncated completion used up), if known."""
    generation = (run.config or {}).get("generation") if run is not None else None
    limit = generation.get("max_completion_length") if isinstance(generation, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


def samples_table(
    db: Database, viewer: Viewer, run_id: str | None, step: int | None, show: str = SHOW_ALL
) -> tuple[list[str], list]:
    """Headers and rows of the samples of one step of a run of ``viewer`` that ``show`` keeps
    (:data:`ui.runs.sample_groups.SAMPLE_FILTERS`), one column per reward component."""
    rows, run = step_samples(db, viewer, run_id, step)
    if run is None:
        return NO_SAMPLES
    return table_of(shown_samples(rows, show, max_tokens(run)))


def table_of(rows: list[Sample]) -> tuple[list[str], list]:
    """Headers and rows of the samples table for ``rows``."""
    components = trace_columns(r.trace for r in rows)
    headers = ["group", "prompt", "completion", "answer", "total", "advantage", *components, "why"]
    out = []
    for r in rows:
        by_name = {t.get("name"): t for t in r.trace if isinstance(t, dict)}
        out.append(
            [
                r.group,
                question(r.prompt),
                completion_view(r.completion, r.extra.get("conversation")),
                r.answer or "",
                fmt(r.total),
                fmt(r.advantage),
                *[fmt(by_name.get(c, {}).get("raw")) for c in components],
                "; ".join(f"{name}: {t.get('explanation', '')}" for name, t in by_name.items()),
            ]
        )
    return headers, out
