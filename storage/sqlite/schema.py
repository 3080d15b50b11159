"""The SQLite schema of Reward Studio: runs, metrics, samples, per-step distributions, log lines and
a schema version.

Conventions:

- Times are UTC epoch seconds (``time.time()`` floats) everywhere; the UI formats them.
- ``Metric.id``, ``StepDistribution.id`` and ``LogLine.id`` are AUTOINCREMENT, so ids are
  never reused, and they are the cursors of incremental reads. SQLite has one writer at a time
  and every write here holds the write lock from ``BEGIN IMMEDIATE`` to ``COMMIT``, so ids
  become visible in id order: a reader that has seen id ``n`` will never later see a new row
  with an id below ``n``.
- A metric value that is not a finite number (NaN, ±inf, ``None``) is stored as NULL: the
  point stays in the series (a chart draws a gap there and can flag it) instead of vanishing.
- JSON columns (``run.config_json``, ``sample.trace_json``, ``sample.extra_json``,
  ``step_distribution.values_json``) hold strict JSON (non-finite floats become ``null``), so a
  browser can parse them as they are. The models expose them decoded (``Run.config``,
  ``Sample.trace``, ``Sample.extra``, ``StepDistribution.values``) through
  :class:`JSONText`, and ``Run.status`` as a :class:`RunStatus` through :class:`EnumText`:
  the table models are the row types the rest of the code reads, nothing is defined twice.

The schema changes only together with ``SCHEMA_VERSION`` and a numbered step in
:mod:`storage.sqlite.migrations`.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

from sqlalchemy import Column, Dialect, Index, String, Text
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from storage.sqlite.encoding import json_text

SCHEMA_VERSION = 5

# The owner of runs started from the command line, and of every run made before owners existed.
LOCAL_OWNER = "local"
# Owner keys of anonymous visitors of a public app start with this (one per browser session).
ANONYMOUS_PREFIX = "anon:"


class RunStatus(str, Enum):
    """The life cycle of a run; see :data:`TRANSITIONS` for the allowed moves."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"

    def __str__(self) -> str:  # f"{status}" reads "running", on every Python version
        return self.value


ACTIVE_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})
TERMINAL_STATUSES = frozenset(
    {RunStatus.COMPLETED, RunStatus.STOPPED, RunStatus.FAILED, RunStatus.INTERRUPTED}
)

# Allowed status changes. Setting the current status again is always allowed (a no-op for the
# status itself), so the launcher and the worker may both record "running".
# - queued: it starts, or is cancelled (stopped), or cannot start (failed).
# - running: it ends one of four ways.
# - completed/stopped/failed: queued or started again (resume or train further).
# - interrupted: resumed like the others, or the worker turns out to be alive after a
#   stale-heartbeat scan and records how it really ended.
TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.STOPPED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset(
        {RunStatus.COMPLETED, RunStatus.STOPPED, RunStatus.FAILED, RunStatus.INTERRUPTED}
    ),
    RunStatus.COMPLETED: frozenset({RunStatus.QUEUED, RunStatus.RUNNING}),
    RunStatus.STOPPED: frozenset({RunStatus.QUEUED, RunStatus.RUNNING}),
    RunStatus.FAILED: frozenset({RunStatus.QUEUED, RunStatus.RUNNING}),
    RunStatus.INTERRUPTED: frozenset(
        {
            RunStatus.QUEUED,
            RunStatus.RUNNING,
            RunStatus.COMPLETED,
            RunStatus.STOPPED,
            RunStatus.FAILED,
        }
    ),
}


class RunPhase(str, Enum):
    """What a running run's worker is doing now, recorded by the worker as it enters each."""

    STARTING = "starting"  # the worker process is up; nothing loaded yet
    LOADING_MODEL = "loading_model"
    RESUMING = "resuming"  # loading the newest complete checkpoint
    FIRST_GENERATION = "first_generation"  # loaded; the first step's completions are sampled
    TRAINING = "training"
    EVALUATING = "evaluating"  # held-out prompts
    SAVING_CHECKPOINT = "saving_checkpoint"
    STOPPING = "stopping"  # asked to stop: the step finishes and a checkpoint is saved
    TIME_BUDGET = "time_budget"  # the time budget is spent: saving a checkpoint
    FINISHING = "finishing"  # every step was trained before a restart: only the end is left
    SAVING_FINAL = "saving_final"

    def __str__(self) -> str:
        return self.value


class JSONText(TypeDecorator[Any]):
    """A TEXT column holding strict JSON, read and written as plain Python values.

    Values are checked and made plain (with an error naming the field) before they reach the
    model, by :func:`storage.sqlite.encoding.plain_json`; this only writes and parses the text.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else json_text(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


class EnumText(TypeDecorator[Enum]):
    """A VARCHAR column holding a value of the str enum ``enum``, read back as the enum (a value
    outside it is refused on the way in)."""

    impl = String
    cache_ok = True

    def __init__(self, enum: type[Enum]) -> None:
        super().__init__()
        self.enum = enum

    def process_bind_param(self, value: Enum | str | None, dialect: Dialect) -> str | None:
        return None if value is None else self.enum(value).value

    def process_result_value(self, value: str | None, dialect: Dialect) -> Enum | None:
        return None if value is None else self.enum(value)


class Run(SQLModel, table=True):
    """One training run, as stored and as the UI and the engine read it; ``config`` is the full
    run config it was started from (column ``config_json``): the run's one record of it, which
    the launcher, resume, downloads, exports and the Playground read (the run folder's
    ``config.yaml`` is only the worker's copy, written from it at each start)."""

    __tablename__ = "run"
    __table_args__ = (
        Index("ix_run_status_created", "status", "created_at"),
        Index("ix_run_owner_created", "owner", "created_at"),
    )

    id: str = Field(primary_key=True)  # short and readable, e.g. "grpo-3f9a1c2b"
    name: str
    algorithm: str
    status: RunStatus = Field(
        default=RunStatus.QUEUED, sa_column=Column("status", EnumText(RunStatus), nullable=False)
    )
    config: dict[str, Any] = Field(sa_column=Column("config_json", JSONText, nullable=False))
    created_at: float
    started_at: float | None = None  # start of the current attempt
    ended_at: float | None = None
    pid: int | None = None
    heartbeat_at: float | None = None
    last_step: int = 0  # highest step with stored metrics or a heartbeat
    total_steps: int | None = None
    error_message: str | None = Field(default=None, sa_column=Column(Text))
    error_traceback: str | None = Field(default=None, sa_column=Column(Text))
    output_dir: str | None = None
    attempt: int = 1  # 1 for the first start, +1 each time a finished run is started again
    # When the run last joined the queue (made, or resumed): the queue's order, so a resumed
    # run waits behind the runs queued before it. None on runs from before schema v3.
    queued_at: float | None = None
    # Who may see and act on the run: "local", "user:<login>", "hf:<username>" or
    # "anon:<visitor key>" (see ui.access.identity); set by the server, never by the client.
    # "anon:<browser session>" (see ui.access.identity); set by the server, never by the client.
    owner: str = Field(default=LOCAL_OWNER, nullable=False)
    # Seconds the run's earlier attempts ran (each ended one adds its started_at -> ended_at
    # when the run is started again), so a resumed run's duration counts them all. 0 on runs
    # resumed before schema v4: their earlier attempts were never measured.
    earlier_attempts_s: float = Field(default=0.0, nullable=False)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class Metric(SQLModel, table=True):
    """One scalar of one run at one step; ``id`` is the cursor of incremental reads."""

    __tablename__ = "metric"
    __table_args__ = (
        # metrics_since(run) without a name filter: a range scan from the cursor.
        Index("ix_metric_run_id", "run_id", "id"),
        # metrics_since(run, names=...) and metric_series: per-name ranges, index-only.
        Index("ix_metric_run_name_id", "run_id", "name", "id"),
        # truncating a run back to a checkpoint step on resume.
        Index("ix_metric_run_step", "run_id", "step"),
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", ondelete="CASCADE")
    step: int
    name: str
    value: float | None = None  # NULL: the logged value was NaN, ±inf or None
    time: float


class PhaseEntry(SQLModel, table=True):
    """A phase a run's worker entered (:class:`RunPhase`), at which step and when; the newest
    row of a run is what its worker is doing now."""

    __tablename__ = "run_phase"
    __table_args__ = (Index("ix_run_phase_run_id", "run_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", ondelete="CASCADE")
    phase: RunPhase = Field(sa_column=Column("phase", EnumText(RunPhase), nullable=False))
    step: int | None = None
    time: float


class Sample(SQLModel, table=True):
    """One generated completion at a step, with its total reward and per-component trace.

    ``trace`` is the reward composer's per-component trace (column ``trace_json``), ``extra``
    any further fields (column ``extra_json``); both are plain JSON values.
    """

    __tablename__ = "sample"
    __table_args__ = (Index("ix_sample_run_step", "run_id", "step"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", ondelete="CASCADE")
    step: int
    prompt_index: int | None = None  # which prompt of the step's batch (or of the dataset)
    group: int | None = None  # completions of one prompt share a group (GRPO/RLOO)
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    completion: str = Field(sa_column=Column(Text, nullable=False))
    answer: str | None = Field(default=None, sa_column=Column(Text))
    total: float | None = None  # weighted total reward; NULL when it could not be scored
    trace: list[Any] = Field(
        default_factory=list, sa_column=Column("trace_json", JSONText, nullable=False)
    )
    advantage: float | None = None
    value: float | None = None  # PPO value estimate
    extra: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column("extra_json", JSONText, nullable=False)
    )
    time: float
    # The completion's length in tokens (what the truncation limit counts); NULL on samples
    # stored before schema v5. Last: where ALTER TABLE put it in migrated files.
    tokens: int | None = None


class StepDistribution(SQLModel, table=True):
    """The values one quantity took over a step's whole generation batch (every completion, not
    only the few stored as samples): ``values`` (column ``values_json``) sorted ascending, all
    ``count`` of them, or :data:`storage.records.distributions.MAX_VALUES` equal-mass quantiles
    of them in a larger batch. ``id`` is the cursor of incremental reads."""

    __tablename__ = "step_distribution"
    __table_args__ = (
        Index("ix_step_distribution_run_id", "run_id", "id"),
        Index("ix_step_distribution_run_step", "run_id", "step"),  # truncating on resume
        {"sqlite_autoincrement": True},
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", ondelete="CASCADE")
    step: int
    name: str
    count: int  # values in the batch (the finite ones), at least len(values)
    values: list[float] = Field(sa_column=Column("values_json", JSONText, nullable=False))
    time: float


class LogLine(SQLModel, table=True):
    """One log line of a run's worker; ``id`` is the cursor of incremental reads."""

    __tablename__ = "log_line"
    __table_args__ = (Index("ix_log_line_run_id", "run_id", "id"), {"sqlite_autoincrement": True})

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", ondelete="CASCADE")
    time: float
    level: str
    message: str = Field(sa_column=Column(Text, nullable=False))


class NoteKind(str, Enum):
    """What a run note says (the Runs view picks its wording and colour by kind)."""

    CONSTANT_COMPONENT = "constant_component"  # a reward component pays the same on every sample
    OUT_OF_MEMORY_RETRY = "out_of_memory_retry"  # retried at a smaller micro-batch
    SKIPPED_UPDATE = "skipped_update"  # an update's gradients were NaN or infinite: not applied
    FINAL_SAVE_FAILED = "final_save_failed"  # the disk refused the final model; a checkpoint kept
    DISK_SPACE_LOW = "disk_space_low"  # the run's plan fills most of the free disk
    CRITIC_NOT_LEARNING = "critic_not_learning"  # PPO's explained variance stayed below 0


class RunNote(SQLModel, table=True):
    """Something a run found that its view shows beside it: a warning or a retry, as a typed
    row (never a log line the UI pattern-matches). ``detail`` holds the kind's fields."""

    __tablename__ = "run_note"
    __table_args__ = (Index("ix_run_note_run_id", "run_id", "id"), {"sqlite_autoincrement": True})

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="run.id", ondelete="CASCADE")
    step: int
    kind: str
    message: str = Field(sa_column=Column(Text, nullable=False))
    detail: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column("detail_json", JSONText, nullable=False)
    )
    time: float


class RunLabel(SQLModel, table=True):
    """What the user wrote about a run: its tags and a note (at most one row per run, none until
    the user writes one). Kept apart from ``run``, which the worker writes, so neither overwrites
    the other; bounds and checks are :mod:`storage.labels`'s."""

    __tablename__ = "run_label"

    run_id: str = Field(primary_key=True, foreign_key="run.id", ondelete="CASCADE")
    tags: list[str] = Field(
        default_factory=list, sa_column=Column("tags_json", JSONText, nullable=False)
    )
    note: str = Field(default="", sa_column=Column(Text, nullable=False))
    updated_at: float


class SchemaVersion(SQLModel, table=True):
    """A single row: the schema version the file is at."""

    __tablename__ = "schema_version"

    version: int = Field(primary_key=True)
    applied_at: float


# Creation order (parents first). Only these tables are created; other SQLModel tables that
# may exist in the process are never touched.
TABLES = (
    Run.__table__,
    Metric.__table__,
    Sample.__table__,
    StepDistribution.__table__,
    PhaseEntry.__table__,
    LogLine.__table__,
    RunNote.__table__,
    RunLabel.__table__,
    SchemaVersion.__table__,
)
