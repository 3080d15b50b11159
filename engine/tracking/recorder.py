"""Where a run's metrics, samples, distributions, progress, phases and log lines go.

The worker talks to one recorder object; under ``accelerate launch`` only the main process gets a
storage-backed one and the others get :class:`NullRecorder` with the same interface, so the
training code never asks "am I the writer?".
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from storage import runs as run_store
from storage.records import distributions as distribution_store
from storage.records import logs as log_store
from storage.records import notes as note_store
from storage.records import phases as phase_store
from storage.records import samples as sample_store
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database, in_transaction
from storage.sqlite.schema import NoteKind, RunPhase

HEARTBEAT_SECONDS = 5.0


class RunRecorder(Protocol):
    def metrics(self, step: int, values: dict[str, float]) -> None: ...
    def samples(self, step: int, rows: list[dict[str, Any]]) -> None: ...
    def distributions(self, step: int, values: Mapping[str, Sequence[float | None]]) -> None: ...
    def progress(self, step: int) -> None: ...
    def phase(self, phase: RunPhase, step: int | None = None) -> None: ...
    def note(
        self, step: int, kind: NoteKind, message: str, detail: dict[str, Any] | None = None
    ) -> None: ...
    def rewind(self, step: int | None, redone_at_step: Iterable[str] = ()) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class NullRecorder:
    """Records nothing: the recorder of non-main processes."""

    def metrics(self, step: int, values: dict[str, float]) -> None:
        pass

    def samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        pass

    def distributions(self, step: int, values: Mapping[str, Sequence[float | None]]) -> None:
        pass

    def progress(self, step: int) -> None:
        pass

    def phase(self, phase: RunPhase, step: int | None = None) -> None:
        pass

    def note(
        self, step: int, kind: NoteKind, message: str, detail: dict[str, Any] | None = None
    ) -> None:
        pass

    def rewind(self, step: int | None, redone_at_step: Iterable[str] = ()) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class ForwardingRecorder:
    """A recorder that hands every call to ``inner``; a watch subclasses it and overrides the
    call it reads (:mod:`engine.tracking.reward_watch`, :mod:`engine.tracking.critic_watch`)."""

    def __init__(self, inner: RunRecorder) -> None:
        self.inner = inner

    def metrics(self, step: int, values: dict[str, float]) -> None:
        self.inner.metrics(step, values)

    def samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        self.inner.samples(step, rows)

    def distributions(self, step: int, values: Mapping[str, Sequence[float | None]]) -> None:
        self.inner.distributions(step, values)

    def progress(self, step: int) -> None:
        self.inner.progress(step)

    def phase(self, phase: RunPhase, step: int | None = None) -> None:
        self.inner.phase(phase, step)

    def note(
        self, step: int, kind: NoteKind, message: str, detail: dict[str, Any] | None = None
    ) -> None:
        self.inner.note(step, kind, message, detail)

    def rewind(self, step: int | None, redone_at_step: Iterable[str] = ()) -> None:
        self.inner.rewind(step, redone_at_step)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()


class StorageRecorder:
    """Writes to the run's rows in SQLite and keeps a heartbeat every few seconds."""

    def __init__(self, db: Database, run_id: str) -> None:
        self.db = db
        self.run_id = run_id
        # A short flush interval keeps the dashboard's write-to-view lag well under its 1 s poll.
        self._writer = MetricWriter(db, run_id, flush_seconds=0.2)
        self._step = 0
        self._phase: RunPhase | None = None
        self._stop = threading.Event()
        # A thread, not the step loop: one generation step of a large model can take minutes.
        self._beat = threading.Thread(target=self._heartbeat_loop, daemon=True, name="heartbeat")
        self._beat.start()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            run_store.heartbeat(self.db, self.run_id, self._step)

    def metrics(self, step: int, values: dict[str, float]) -> None:
        self._writer.log(step, values)  # written within flush_seconds, never blocks the step

    def samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        sample_store.add_samples(self.db, self.run_id, step, rows)

    def distributions(self, step: int, values: Mapping[str, Sequence[float | None]]) -> None:
        """One value per completion of the step's whole batch, by name (compacted by storage)."""
        distribution_store.add_distributions(self.db, self.run_id, step, values)

    def progress(self, step: int) -> None:
        self._step = step
        run_store.heartbeat(self.db, self.run_id, step)

    def phase(self, phase: RunPhase, step: int | None = None) -> None:
        """Record the phase the worker enters now: the run view reads it, never the log."""
        if phase != self._phase:
            self._phase = phase
            phase_store.record_phase(self.db, self.run_id, phase, step)

    def note(
        self, step: int, kind: NoteKind, message: str, detail: dict[str, Any] | None = None
    ) -> None:
        """A warning or retry the Runs view shows beside the run (a typed row, not a log)."""
        note_store.add_note(self.db, self.run_id, step, kind, message, detail)

    def rewind(self, step: int | None, redone_at_step: Iterable[str] = ()) -> None:
        """Drop the rows a resume from ``step`` records again (``None``: from scratch, all);
        see :func:`storage.runs.truncate_run`."""
        self._writer.flush()
        run_store.truncate_run(self.db, self.run_id, step, redone_at_step=redone_at_step)
        self._step = step or 0

    def flush(self) -> None:
        """Commit every metric logged so far (samples are committed as they are added)."""
        self._writer.flush()

    def close(self) -> None:
        self._stop.set()
        self._beat.join(timeout=HEARTBEAT_SECONDS + 1)
        self._writer.close()


class StorageLogHandler(logging.Handler):
    """Sends log records to the run's log view in small batches, with paths inside
    ``data_dir`` written relative to it: the view and the run's export are shown to visitors,
    who see no server path (a checkpoint reads ``runs/<id>/checkpoint-5``)."""

    def __init__(
        self,
        db: Database,
        run_id: str,
        flush_seconds: float = 1.0,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(level=logging.INFO)
        self.db = db
        self.run_id = run_id
        self.flush_seconds = flush_seconds
        given = [] if data_dir is None else [str(data_dir), str(Path(data_dir).resolve())]
        self._data_dirs = sorted({d.rstrip(os.sep) for d in given}, key=len, reverse=True)
        self._pending: list[tuple[float, str, str]] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        for folder in self._data_dirs:
            text = text.replace(folder + os.sep, "").replace(folder, ".")
        with self._lock:
            self._pending.append((record.created, record.levelname, text))
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        # A line logged inside a transaction of this thread (the database's own retry warning,
        # a stop signal's handler) waits for the next flush: its write would wait on the lock
        # the thread holds, logging again as it waits.
        if in_transaction():
            return
        with self._lock:
            pending, self._pending = self._pending, []
            self._last_flush = time.monotonic()
        if pending:
            log_store.append_logs(self.db, self.run_id, pending)
