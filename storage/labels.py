"""What a user writes about their runs: tags and a note per run, checked and bounded here.

Tags are short words to find runs by ("baseline", "lr-sweep"); the note is free text. Both are
the user's own text: they are bounded in length here and escaped wherever a page shows them.
Every error names the field (``tags`` or ``note``) and the bound.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import select
from sqlmodel import Session

from storage.runs import RunNotFoundError
from storage.shown_text import hidden_character
from storage.sqlite.db import Database
from storage.sqlite.encoding import is_storable_text
from storage.sqlite.schema import Run, RunLabel

MAX_TAGS = 10
MAX_TAG_CHARS = 32
MAX_NOTE_CHARS = 2000
ID_BATCH = 500  # run ids per query when reading many runs' labels


class LabelError(ValueError):
    """Tags or a note that cannot be stored; the message names the field."""


def clean_tags(raw: str | Iterable[str] | None) -> list[str]:
    """Tags from comma-separated text (or a list): trimmed, inner spaces collapsed, duplicates
    dropped (case-insensitively, the first spelling kept), each at most :data:`MAX_TAG_CHARS`,
    at most :data:`MAX_TAGS`."""
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = raw.split(",")
    tags: dict[str, str] = {}
    for item in raw:
        if not isinstance(item, str):
            raise LabelError(f"tags: each tag is text, got {type(item).__name__}")
        tag = " ".join(item.split())
        if not tag:
            continue
        if len(tag) > MAX_TAG_CHARS:
            raise LabelError(
                f"tags: {tag[:MAX_TAG_CHARS]!r}… has {len(tag)} characters; a tag has at most "
                f"{MAX_TAG_CHARS}"
            )
        if not tag.isprintable():
            raise LabelError(f"tags: {tag!r} holds a control character")
        tags.setdefault(tag.casefold(), tag)
    if len(tags) > MAX_TAGS:
        raise LabelError(f"tags: {len(tags)} tags; a run has at most {MAX_TAGS}")
    return list(tags.values())


def clean_note(raw: str | None) -> str:
    """The note, trimmed, at most :data:`MAX_NOTE_CHARS` characters, its line breaks ``\\n``;
    no character that hides or reorders text (:mod:`storage.shown_text`)."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise LabelError(f"note: expected text, got {type(raw).__name__}")
    note = raw.replace("\r\n", "\n").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise LabelError(f"note: {len(note):,} characters; a note has at most {MAX_NOTE_CHARS:,}")
    if hidden := hidden_character(note, keep="\n\t"):
        raise LabelError(f"note: holds {hidden}; write it without")
    return note


def set_label(
    db: Database,
    run_id: str,
    *,
    tags: str | Iterable[str] | None,
    note: str | None,
    owner: str | None = None,
) -> RunLabel:
    """Store the run's tags and note (replacing what it had) and return them.

    With ``owner``, only a run of that owner: another owner's run reads like a missing one
    (:class:`RunNotFoundError`), checked in the same transaction as the write.
    """
    values = {"tags": clean_tags(tags), "note": clean_note(note)}

    def write(session: Session) -> RunLabel:
        run = session.get(Run, run_id) if is_storable_text(run_id) else None
        if run is None or (owner is not None and run.owner != owner):
            raise RunNotFoundError(f"no run with id {run_id!r}")
        row = session.get(RunLabel, run_id) or RunLabel(run_id=run_id, updated_at=0.0)
        row.tags, row.note, row.updated_at = values["tags"], values["note"], time.time()
        session.add(row)
        session.flush()
        return row

    return db.write(write)


def labels_of(db: Database, run_ids: Iterable[str]) -> dict[str, RunLabel]:
    """``{run id: label}`` of the runs among ``run_ids`` that have one."""
    wanted = [r for r in dict.fromkeys(run_ids) if isinstance(r, str)]

    def read(session: Session) -> dict[str, RunLabel]:
        found: dict[str, RunLabel] = {}
        for start in range(0, len(wanted), ID_BATCH):  # under SQLite's bound on parameters
            query = select(RunLabel).where(RunLabel.run_id.in_(wanted[start : start + ID_BATCH]))
            found.update((row.run_id, row) for row in session.scalars(query))
        return found

    return db.read(read) if wanted else {}


def label_of(db: Database, run_id: str) -> RunLabel | None:
    """The run's label, or ``None`` before its user wrote one."""
    return labels_of(db, [run_id]).get(run_id)
