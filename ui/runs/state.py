"""The state of the Runs view of one browser session, as plain dataclasses (no Gradio).

:class:`RunsSnapshot` is what the 1 s timer's one cheap query (``storage.progress.run_progress``)
returned; comparing two snapshots says whether the run list must be redrawn.
:class:`RunView` holds the points of the selected run read so far and the cursor of the next
incremental read, so each tick fetches only new rows, and says which series changed.

The view is the selection: only a selection event (a pick in the run menu, a row clicked, a run
opened by a link or started in Train) calls :meth:`RunView.select`. A timer tick reads the view and
never writes the run or the step back into the page: a tick sent before a pick may come back after
it, and one that wrote its selection back undid the pick.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.progress import RunProgress
from storage.sqlite.schema import TERMINAL_STATUSES, RunStatus
from ui.plots.distribution_series import DistributionHistory
from ui.plots.series import Series


@dataclass(frozen=True)
class RunsSnapshot:
    """The progress of every run at one poll: ``{run_id: RunProgress}``."""

    progress: Mapping[str, RunProgress] = field(default_factory=dict)

    def list_key(self) -> tuple:
        """What the run list shows (ids, statuses, steps); equal keys need no redraw."""
        return tuple(sorted((rid, str(p.status), p.last_step) for rid, p in self.progress.items()))

    def get(self, run_id: str | None) -> RunProgress | None:
        return None if run_id is None else self.progress.get(run_id)


class ViewLock:
    """The lock of one view. A session's timer tick and its selection events run at once in
    different threads (different pools) and both move the view's cursors; ``gr.State`` copies the
    initial view for each session, and each copy gets a lock of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> ViewLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def __deepcopy__(self, memo: dict) -> ViewLock:
        return ViewLock()


@dataclass
class RunView:
    """The selected run of one session: its series read so far and the read cursors.

    Attributes:
        run_id: the selected run, or ``None``.
        cursor: id of the last metric row read (``storage.records.metrics.metrics_since`` cursor).
        log_cursor: id of the last log line read.
        series: metric name -> points read so far.
        status: the run status last shown.
        last_step: the run's last step last shown.
        list_key: :meth:`RunsSnapshot.list_key` of the run list last shown, with the filter it
            was shown with (``None``: redraw the list at the next tick).
        sample_steps: the steps with samples offered in the step picker.
        sample_step: the step the picker shows (the newest, or one the user picked).
        samples_shown: ``(run, step, filter)`` whose samples the table shows; the table is drawn
            again when :attr:`samples_key` or :attr:`sample_filter` differs, however the run,
            the step or the filter changed.
        sample_filter: which samples of the step the table shows
            (:data:`ui.runs.sample_groups.SAMPLE_FILTERS`); kept when another run is opened.
        distributions: the per-step distributions of the run read so far, with their cursor.
        lock: held by each event that reads or moves the view.
    """

    run_id: str | None = None
    cursor: int = 0
    log_cursor: int = 0
    series: dict[str, Series] = field(default_factory=dict)
    log_lines: list[str] = field(default_factory=list)
    status: str | None = None
    last_step: int = -1
    list_key: tuple | None = None
    max_log_lines: int = 500
    sample_steps: list[int] = field(default_factory=list)
    sample_step: int | None = None
    samples_shown: tuple[str, int, str] | None = None
    sample_filter: str = "all"
    distributions: DistributionHistory = field(default_factory=DistributionHistory)
    stop_asked: str | None = None  # the run this session asked to stop, until it has stopped
    phase: str | None = None  # the worker's phase last shown
    # An action's message ("Resuming …", "Stop asked …") lasts while the status the action led
    # to does: the status seen at the first poll after it, then cleared when that one moves.
    message_run: str | None = None
    message_status: str | None = None
    # The run drawn under this one's charts (ui.runs.baseline), read when picked.
    baseline_id: str | None = None
    baseline_name: str = ""
    baseline_series: dict[str, Series] = field(default_factory=dict)
    baseline_clock: Any = None
    # The open run's ui.plots.x_axes.RunClock (its start, stop/resume gaps, batch, token count):
    # what the charts' x axes other than the step are drawn by, read again as the run moves.
    clock: Any = None
    lock: ViewLock = field(default_factory=ViewLock, repr=False, compare=False)

    def select(self, run_id: str | None) -> None:
        """Show another run: forget the points and cursors of the previous one."""
        self.run_id = run_id
        self.cursor = 0
        self.log_cursor = 0
        self.series = {}
        self.log_lines = []
        self.status = None
        self.last_step = -1
        self.sample_steps = []
        self.sample_step = None  # a step picked in another run is not picked in this one
        self.phase = None
        self.distributions = DistributionHistory()
        self.clock = None

    def said(self, run_id: str | None) -> None:
        """An action on ``run_id`` has put its message under the buttons."""
        self.message_run, self.message_status = run_id, None

    def message_outlived(self, status: str | None) -> bool:
        """Whether the open run's ``status`` has moved past the one its action led to: the
        message is then cleared (True, once)."""
        if self.message_run is None or self.message_run != self.run_id or status is None:
            return False
        if self.message_status is None:
            self.message_status = status
            return False
        if status == self.message_status:
            return False
        self.message_run = self.message_status = None
        return True

    def offer_sample_steps(self, steps: Iterable[int]) -> bool:
        """The run's steps with samples, read again: the picker keeps a step the user picked
        among them, and follows the newest otherwise. True when the picker must be redrawn."""
        steps = list(steps)
        following = not self.sample_steps or self.sample_step == self.sample_steps[-1]
        kept = self.sample_step in steps and not following
        step = self.sample_step if kept else (steps[-1] if steps else None)
        moved = (steps, step) != (self.sample_steps, self.sample_step)
        self.sample_steps, self.sample_step = steps, step
        return moved

    def pick_sample_step(self, step: Any) -> bool:
        """The user picked ``step`` in the picker; False (and nothing changes) when it is not a
        step of this run with samples."""
        try:
            step = int(step)
        except (TypeError, ValueError, OverflowError):
            return False
        if step not in self.sample_steps:
            return False
        self.sample_step = step
        return True

    @property
    def samples_key(self) -> tuple[str, int] | None:
        """``(run, step)`` whose samples the table should show (``None``: none)."""
        if self.run_id is None or self.sample_step is None:
            return None
        return (self.run_id, self.sample_step)

    def needs_metrics(self, progress: RunProgress | None) -> bool:
        """True when the database holds metric rows of the run this view has not read."""
        return progress is not None and progress.metric_cursor > self.cursor

    def progress_changed(self, progress: RunProgress | None) -> bool:
        """True when status, step or phase moved since last shown (the status line and the
        progress bar need a redraw)."""
        if progress is None:
            return self.status is not None
        return (str(progress.status), progress.last_step, progress.phase) != (
            self.status,
            self.last_step,
            self.phase,
        )

    def mark_shown(self, progress: RunProgress | None) -> None:
        self.status = None if progress is None else str(progress.status)
        self.last_step = -1 if progress is None else progress.last_step
        self.phase = None if progress is None else progress.phase

    def absorb(self, points: Iterable[Any], next_cursor: int) -> set[str]:
        """Add metric rows (``MetricPoint``-like: ``.step``, ``.name``, ``.value``) read up to
        ``next_cursor``; returns the names of the series that changed."""
        changed: set[str] = set()
        for point in points:
            self.series.setdefault(point.name, Series()).add(
                point.step, point.value, getattr(point, "time", None)
            )
            changed.add(point.name)
        self.cursor = max(self.cursor, next_cursor)
        return changed

    def absorb_logs(self, lines: Iterable[str], next_cursor: int) -> bool:
        """Add log lines; keeps the newest ``max_log_lines``. Returns whether any came."""
        new = list(lines)
        self.log_lines.extend(new)
        dropped = max(0, len(self.log_lines) - self.max_log_lines)
        del self.log_lines[:dropped]
        self.log_cursor = max(self.log_cursor, next_cursor)
        return bool(new)

    def latest(self) -> dict[str, float]:
        """The newest finite value of every series."""
        return {name: s.last for name, s in self.series.items() if s.last is not None}

    @property
    def finished(self) -> bool:
        return self.status is not None and RunStatus(self.status) in TERMINAL_STATUSES
