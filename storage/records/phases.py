"""The phases a run's worker goes through (:class:`storage.sqlite.schema.RunPhase`), as rows."""

from __future__ import annotations

import time

from sqlalchemy import select
from sqlmodel import Session

from storage.sqlite.db import Database
from storage.sqlite.queries import insert_rows
from storage.sqlite.schema import PhaseEntry, RunPhase


def record_phase(db: Database, run_id: str, phase: RunPhase | str, step: int | None = None) -> None:
    """Store that the run's worker enters ``phase`` now, at ``step`` (None: before any step)."""
    row = {"run_id": run_id, "phase": RunPhase(phase), "step": step, "time": time.time()}
    insert_rows(db, PhaseEntry, run_id, [row])


def phases(db: Database, run_id: str) -> list[tuple[RunPhase, int | None]]:
    """Every phase the run's workers entered, oldest first, with its step."""

    def read(session: Session) -> list[tuple[RunPhase, int | None]]:
        query = select(PhaseEntry.phase, PhaseEntry.step).where(PhaseEntry.run_id == run_id)
        return [(phase, step) for phase, step in session.execute(query.order_by(PhaseEntry.id))]

    return db.read(read)


def phase_times(db: Database, run_id: str) -> list[tuple[RunPhase, int | None, float]]:
    """Every phase the run's workers entered, oldest first, with its step and time (seconds
    since the epoch): where each attempt began, for the charts' time axes."""

    def read(session: Session) -> list[tuple[RunPhase, int | None, float]]:
        query = select(PhaseEntry.phase, PhaseEntry.step, PhaseEntry.time)
        query = query.where(PhaseEntry.run_id == run_id).order_by(PhaseEntry.id)
        return [(phase, step, at) for phase, step, at in session.execute(query)]

    return db.read(read)
