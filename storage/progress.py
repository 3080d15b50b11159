"""What the dashboard's 1 s timer reads of every run in one cheap query: status, last step,
newest metric id, heartbeat and phase."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import func, select
from sqlmodel import Session

from storage.sqlite.db import Database
from storage.sqlite.schema import (
    Metric,
    PhaseEntry,
    Run,
    RunStatus,
)


class RunProgress(NamedTuple):
    """What the UI's timer needs to decide whether anything of a run changed."""

    status: RunStatus
    last_step: int
    metric_cursor: int  # id of the run's newest metric row, 0 if none
    heartbeat_at: float | None
    phase: str | None = None  # the RunPhase value its worker recorded last


def latest_steps(db: Database) -> dict[str, int]:
    """``{run_id: last_step}`` for every run: one query over the run table, whose cost does not
    grow with the number of stored metrics. Metric flushes and heartbeats keep it current."""
    query = select(Run.id, Run.last_step)
    return db.read(lambda session: {rid: step for rid, step in session.execute(query)})


def run_progress(db: Database, *, owner: str | None = None) -> dict[str, RunProgress]:
    """Status, last step, newest metric id, heartbeat and phase of every run (of ``owner`` when
    given), in one query.

    The newest metric id and phase come from their ``(run_id, id)`` indexes, one lookup each
    per run, so this stays flat as metrics grow; a changed ``metric_cursor`` means new points to
    fetch.
    """
    newest = select(func.max(Metric.id)).where(Metric.run_id == Run.id).scalar_subquery()
    phase = (  # of the current attempt only: a resumed run is not still "stopping"
        select(PhaseEntry.phase)
        .where(PhaseEntry.run_id == Run.id, PhaseEntry.time >= func.coalesce(Run.started_at, 0))
        .order_by(PhaseEntry.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    query = select(Run.id, Run.status, Run.last_step, newest, Run.heartbeat_at, phase)
    if owner is not None:
        query = query.where(Run.owner == owner)

    def read(session: Session) -> dict[str, RunProgress]:
        return {
            rid: RunProgress(status, last_step, cursor or 0, beat, phase and str(phase))
            for rid, status, last_step, cursor, beat, phase in session.execute(query)
        }

    return db.read(read)
