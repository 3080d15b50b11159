"""A run's notes: warnings and retries the worker found, stored as typed rows for the Runs view."""

from __future__ import annotations

import time
from typing import Any

from sqlmodel import select

from storage.sqlite.db import Database
from storage.sqlite.queries import insert_rows
from storage.sqlite.schema import NoteKind, RunNote

# A run writes a handful of notes; the view reads at most this many.
MAX_NOTES = 100
MAX_MESSAGE_CHARS = 2000


def add_note(
    db: Database,
    run_id: str,
    step: int,
    kind: NoteKind,
    message: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """Store one note of ``kind`` at ``step`` (a missing run: RunNotFoundError)."""
    if not isinstance(kind, NoteKind):
        raise ValueError(f"kind must be one of {[k.value for k in NoteKind]}, got {kind!r}")
    row = {
        "run_id": run_id,
        "step": int(step),
        "kind": kind.value,
        "message": str(message)[:MAX_MESSAGE_CHARS],
        "detail": dict(detail or {}),
        "time": time.time(),
    }
    insert_rows(db, RunNote, run_id, [row])


def notes_of_run(db: Database, run_id: str) -> list[RunNote]:
    """The run's notes in the order they were written (at most ``MAX_NOTES``)."""
    query = select(RunNote).where(RunNote.run_id == run_id).order_by(RunNote.id).limit(MAX_NOTES)
    return db.read(lambda session: list(session.exec(query)))
