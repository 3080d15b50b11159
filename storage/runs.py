"""Runs: create, read, list, update, status changes, heartbeats, delete, and the UI's poll query.

Status changes go through :data:`storage.sqlite.schema.TRANSITIONS` and keep the timestamps honest:
entering ``running`` stamps ``started_at`` (the start of the current attempt) and clears
``ended_at``; entering a terminal status stamps ``ended_at``; leaving a terminal status (resume,
train further) counts a new ``attempt`` and clears the previous error.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from storage.run_caps import ActiveRunCaps, check_caps
from storage.sqlite.db import Database
from storage.sqlite.encoding import (
    config_object,
    epoch_or_none,
    finite_or_none,
    is_storable_text,
    optional_int,
    text_field,
)
from storage.sqlite.schema import (
    LOCAL_OWNER,
    TERMINAL_STATUSES,
    TRANSITIONS,
    LogLine,
    Metric,
    PhaseEntry,
    Run,
    RunLabel,
    RunNote,
    RunStatus,
    Sample,
    StepDistribution,
)

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# Fields update_run may set: every field of the model but those fixed when the run is made.
UPDATABLE_FIELDS = frozenset(Run.model_fields) - {"id", "algorithm", "created_at", "owner"}


class RunNotFoundError(LookupError):
    """No run has the given id."""


class InvalidTransitionError(ValueError):
    """A status change that :data:`storage.sqlite.schema.TRANSITIONS` does not allow."""


# A run as the UI and the engine see it: the table model itself (``config`` decoded, ``status``
# a RunStatus, ``is_terminal``); the name stays for the callers that type with it.
RunInfo = Run


def _status(value: Any, field: str = "status") -> RunStatus:
    try:
        return RunStatus(value)
    except ValueError:
        allowed = ", ".join(s.value for s in RunStatus)
        raise ValueError(f"{field}: {value!r} is not a run status; allowed: {allowed}") from None


def new_run_id(algorithm: str) -> str:
    """A short readable id such as ``grpo-3f9a1c2b``."""
    prefix = re.sub(r"[^a-z0-9]+", "-", algorithm.lower()).strip("-") or "run"
    return f"{prefix}-{secrets.token_hex(4)}"


def create_run(
    db: Database,
    *,
    algorithm: str,
    config: Mapping[str, Any] | str | Any,
    name: str | None = None,
    run_id: str | None = None,
    status: RunStatus | str = RunStatus.QUEUED,
    total_steps: int | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    owner: str = LOCAL_OWNER,
    caps: ActiveRunCaps | None = None,
) -> RunInfo:
    """Record a new run (``queued`` unless told otherwise) and return it.

    ``run_id`` defaults to :func:`new_run_id`; an id already taken is an error. ``owner`` is
    the key of the user it belongs to (``ui.access.identity``), ``local`` for the command line. Over
    one of ``caps`` the run is refused (:class:`TooManyActiveRunsError`, naming the cap); the
    counts and the insert are one transaction.
    """
    algorithm = text_field(algorithm, "algorithm")
    owner = text_field(owner, "owner")
    if run_id is not None and not RUN_ID_PATTERN.match(run_id):
        raise ValueError(
            f"run_id: {run_id!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    status = _status(status)
    if status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        raise ValueError(f"status: a new run is queued or running, not {status.value}")
    plain_config = config_object(config)
    total_steps = optional_int(total_steps, "total_steps", minimum=0)
    output_dir = text_field(output_dir, "output_dir", optional=True)
    if name is not None:
        name = text_field(name, "name")

    for _ in range(5):
        rid = run_id or new_run_id(algorithm)
        now = time.time()
        row = Run(
            id=rid,
            name=name or rid,
            algorithm=algorithm,
            status=status,
            config=plain_config,
            created_at=now,
            queued_at=now if status == RunStatus.QUEUED else None,
            started_at=now if status == RunStatus.RUNNING else None,
            total_steps=total_steps,
            output_dir=output_dir,
            owner=owner,
        )

        def insert(session: Session, row: Run = row) -> RunInfo:
            if caps is not None:
                check_caps(session, row.owner, caps)
            session.add(row)
            session.flush()
            return row

        try:
            return db.write(insert)
        except IntegrityError:
            if run_id is not None:
                raise ValueError(f"run_id: a run with id {run_id!r} already exists") from None
    raise RuntimeError("could not draw an unused run id in 5 tries")  # pragma: no cover


def get_run(db: Database, run_id: str, *, owner: str | None = None) -> RunInfo | None:
    """The run with this id, or ``None``; also ``None`` when ``owner`` is given and the run
    belongs to someone else, so another user's run reads exactly like a missing one."""

    def read(session: Session) -> RunInfo | None:
        row = session.get(Run, run_id) if is_storable_text(run_id) else None
        if row is None or (owner is not None and row.owner != owner):
            return None
        return row

    return db.read(read)


def list_runs(
    db: Database,
    statuses: Iterable[RunStatus | str] | None = None,
    *,
    owner: str | None = None,
) -> list[RunInfo]:
    """Runs, newest first; only those with one of ``statuses`` and of ``owner`` when given."""
    wanted = None if statuses is None else [_status(s, "statuses").value for s in statuses]

    def read(session: Session) -> list[RunInfo]:
        query = select(Run).order_by(Run.created_at.desc(), Run.id)
        if wanted is not None:
            query = query.where(Run.status.in_(wanted))
        if owner is not None:
            query = query.where(Run.owner == owner)
        return list(session.scalars(query))

    return db.read(read)


def next_queued(db: Database) -> RunInfo | None:
    """The run queued longest, the next one to start (a resumed run queues from its resume)."""

    def read(session: Session) -> RunInfo | None:
        return session.scalars(
            select(Run)
            .where(Run.status == RunStatus.QUEUED)
            .order_by(func.coalesce(Run.queued_at, Run.created_at), Run.id)
            .limit(1)
        ).first()

    return db.read(read)


def requeue_run(
    db: Database,
    run_id: str,
    *,
    allowed: Iterable[RunStatus],
    caps: ActiveRunCaps | None = None,
) -> RunInfo:
    """Queue a finished run (one of ``allowed`` statuses) again, at the back of the queue and
    within ``caps`` as a new run of its owner is: the counts and the update are one
    transaction, so resumes cannot pass a cap that starts respect.

    Raises:
        ValueError: no such run, or its status is not one of ``allowed`` (the message says).
        TooManyActiveRunsError: over one of ``caps``.
    """
    wanted = [_status(s) for s in allowed]

    def requeue(session: Session) -> RunInfo:
        row = session.get(Run, run_id)
        if row is None:
            raise ValueError(f"no run with id {run_id!r}")
        if row.status not in wanted:
            names = ", ".join(s.value for s in wanted)
            raise ValueError(f"run {run_id} is {row.status.value}; only {names} runs can resume")
        if caps is not None:
            check_caps(session, row.owner, caps)
        # The status rules of set_status: a new attempt, the old error is history.
        return _apply(session, run_id, {"status": RunStatus.QUEUED, "queued_at": time.time()})

    return db.write(requeue)


def _normalise(fields: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(fields) - UPDATABLE_FIELDS)
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)}: not a run field that can be updated; allowed: "
            f"{', '.join(sorted(UPDATABLE_FIELDS))}"
        )
    values: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "status":
            values["status"] = _status(value)
        elif key == "config":
            values["config"] = config_object(value)
        elif key == "name":
            values["name"] = text_field(value, "name")
        elif key in ("pid", "total_steps"):
            values[key] = optional_int(value, key, minimum=0)
        elif key in ("last_step", "attempt"):
            values[key] = optional_int(value, key, minimum=0 if key == "last_step" else 1)
            if values[key] is None:
                raise ValueError(f"{key}: must be an integer, not None")
        elif key == "earlier_attempts_s":
            values[key] = max(0.0, finite_or_none(value, key) or 0.0)
        elif key in ("started_at", "ended_at", "heartbeat_at"):
            values[key] = epoch_or_none(value, key)
        elif key == "output_dir":
            values[key] = text_field(value, key, optional=True)
        else:  # error_message, error_traceback
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{key}: expected a string or None, got {type(value).__name__}")
            values[key] = value
    return values


def _apply(session: Session, run_id: str, values: dict[str, Any]) -> RunInfo:
    row = session.get(Run, run_id)
    if row is None:
        raise RunNotFoundError(f"no run with id {run_id!r}")
    new = values.pop("status", None)
    if new is not None:
        old = row.status
        if new != old:
            if new not in TRANSITIONS[old]:
                allowed = ", ".join(sorted(s.value for s in TRANSITIONS[old]))
                raise InvalidTransitionError(
                    f"status: run {run_id} cannot go from {old.value} to {new.value}; "
                    f"from {old.value} it can go to {allowed}"
                )
            now = time.time()
            stamps: dict[str, Any] = {}
            if old in TERMINAL_STATUSES:  # started again: a new attempt, the old error is history
                stamps.update(
                    attempt=row.attempt + 1, error_message=None, error_traceback=None, ended_at=None
                )
                if new in (RunStatus.QUEUED, RunStatus.RUNNING) and row.started_at and row.ended_at:
                    # the attempt that ended keeps counting in the run's duration
                    ran = max(0.0, row.ended_at - row.started_at)
                    stamps["earlier_attempts_s"] = row.earlier_attempts_s + ran
            if new == RunStatus.RUNNING:
                stamps.update(started_at=now, ended_at=None, heartbeat_at=now)
            elif new in TERMINAL_STATUSES:
                stamps["ended_at"] = now
            values = {**stamps, **values}  # explicitly given values win
        row.status = new
    for key, value in values.items():
        setattr(row, key, value)
    session.add(row)
    session.flush()
    return row


def update_run(db: Database, run_id: str, **fields: Any) -> RunInfo:
    """Set fields of a run and return it; ``status`` follows the same rules as
    :func:`set_status`. Raises :class:`RunNotFoundError` for an unknown id."""
    values = _normalise(fields)
    return db.write(lambda session: _apply(session, run_id, dict(values)))


def set_status(
    db: Database,
    run_id: str,
    status: RunStatus | str,
    *,
    error: str | None = None,
    traceback: str | None = None,
    **fields: Any,
) -> RunInfo:
    """Move a run to ``status`` (see :data:`storage.sqlite.schema.TRANSITIONS`), with the error
    message and traceback of a failure, and any other run fields (e.g. ``pid``)."""
    extra = dict(fields, status=status)
    if error is not None:
        extra["error_message"] = error
    if traceback is not None:
        extra["error_traceback"] = traceback
    return update_run(db, run_id, **extra)


def heartbeat(db: Database, run_id: str, step: int | None = None) -> None:
    """Record that the run's worker is alive, and its step (``last_step`` never goes back)."""
    step = optional_int(step, "step", minimum=0)
    values: dict[str, Any] = {"heartbeat_at": time.time()}
    if step is not None:
        values["last_step"] = func.max(Run.last_step, step)

    def write(session: Session) -> None:
        result = session.execute(update(Run).where(Run.id == run_id).values(**values))
        if result.rowcount == 0:
            raise RunNotFoundError(f"no run with id {run_id!r}")

    db.write(write)


def delete_run(db: Database, run_id: str) -> bool:
    """Delete a run with all its metrics, samples, distributions, log lines, notes and labels;
    False if there was none.

    Stopping a running worker first is the caller's job (its writes would fail afterwards).
    """

    def write(session: Session) -> bool:
        for table in (Metric, Sample, StepDistribution, LogLine, PhaseEntry, RunNote, RunLabel):
            session.execute(delete(table).where(table.run_id == run_id))
        return session.execute(delete(Run).where(Run.id == run_id)).rowcount > 0

    return db.write(write)


def truncate_run(
    db: Database,
    run_id: str,
    after_step: int | None,
    *,
    redone_at_step: Iterable[str] = (),
) -> int:
    """Delete the run's metrics, samples and distributions past ``after_step`` and set
    ``last_step`` to it.

    For a resume from a checkpoint at ``after_step``: the steps after it are trained again, so
    their old points would otherwise appear twice in the series. ``redone_at_step`` names metrics
    of ``after_step`` itself that the resumed run records again (the final evaluation, which
    runs after the last checkpoint). ``after_step=None``: the run restarts from scratch (no
    checkpoint) and every metric, sample and distribution row goes. Returns the rows deleted.
    Readers holding a cursor keep what they already read; they see ``last_step`` go back.
    """
    after_step = optional_int(after_step, "after_step", minimum=0)
    keep_through = -1 if after_step is None else after_step
    redone = [str(name) for name in redone_at_step]

    def write(session: Session) -> int:
        if session.get(Run, run_id) is None:
            raise RunNotFoundError(f"no run with id {run_id!r}")
        deleted = 0
        for table in (Metric, Sample, StepDistribution):
            result = session.execute(
                delete(table).where(table.run_id == run_id, table.step > keep_through)
            )
            deleted += result.rowcount
        if redone:
            result = session.execute(
                delete(Metric).where(
                    Metric.run_id == run_id, Metric.step == keep_through, Metric.name.in_(redone)
                )
            )
            deleted += result.rowcount
        session.execute(update(Run).where(Run.id == run_id).values(last_step=after_step or 0))
        return deleted

    return db.write(write)
