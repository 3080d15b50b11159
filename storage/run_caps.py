"""Caps on queued plus running runs, checked inside the transaction that records a new run.

A public demo bounds the work one user can line up: runs per owner, and runs of all anonymous
visitors together (each new browser session is a new anonymous owner, so a per-owner cap alone
does not bound a script that opens sessions).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlmodel import Session

from storage.sqlite.db import Database
from storage.sqlite.schema import ACTIVE_STATUSES, ANONYMOUS_PREFIX, Run


class TooManyActiveRunsError(ValueError):
    """The owner already has as many queued and running runs as allowed."""


@dataclass(frozen=True)
class ActiveRunCaps:
    """How many queued plus running runs a new run may join (``None``: no cap).

    Attributes:
        per_owner: runs of the new run's owner.
        anonymous_total: runs of all anonymous owners together, for a run of an anonymous
            owner: a visitor can open any number of browser sessions, each a new owner.
    """

    per_owner: int | None = None
    anonymous_total: int | None = None


def _count_active(session: Session, owner: str | None = None, *, prefix: str = "") -> int:
    wanted = [s.value for s in ACTIVE_STATUSES]
    query = select(func.count()).select_from(Run).where(Run.status.in_(wanted))
    if owner is not None:
        query = query.where(Run.owner == owner)
    if prefix:
        query = query.where(func.substr(Run.owner, 1, len(prefix)) == prefix)
    return int(session.execute(query).scalar() or 0)


def check_caps(session: Session, owner: str, caps: ActiveRunCaps) -> None:
    """Raise :class:`TooManyActiveRunsError` when a new run of ``owner`` would pass a cap."""
    if caps.per_owner is not None:
        active = _count_active(session, owner)
        if active >= caps.per_owner:
            raise TooManyActiveRunsError(
                f"runs: you have {active} queued or running runs, the most this app allows per "
                f"user ({caps.per_owner}); wait for one to finish or stop one"
            )
    if caps.anonymous_total is not None and owner.startswith(ANONYMOUS_PREFIX):
        active = _count_active(session, prefix=ANONYMOUS_PREFIX)
        if active >= caps.anonymous_total:
            raise TooManyActiveRunsError(
                f"runs: anonymous visitors have {active} queued or running runs together, the "
                f"most this app allows ({caps.anonymous_total}); sign in to start yours, or "
                "wait for one to finish"
            )


def count_active(db: Database, owner: str) -> int:
    """How many runs of ``owner`` are queued or running (for the per-user queue cap)."""
    return db.read(lambda session: _count_active(session, owner))
