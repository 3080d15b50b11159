"""What the Runs view does each timer tick and on each action, without Gradio.

:func:`poll` runs the one cheap query (``storage.progress.run_progress``: status, last step and
newest metric id of every run), and only when something moved reads more: the run list when a
status or step changed, new metric rows by cursor when the selected run has any, log lines when it
progressed. It returns a :class:`RunsUpdate` whose ``None`` fields mean "unchanged: do not redraw".
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storage import labels as label_store
from storage import progress as progress_store
from storage import runs as run_store
from storage.records import distributions as distribution_store
from storage.records import logs as log_store
from storage.records import metrics as metric_store
from storage.records import notes as note_store
from storage.records import samples as sample_store
from storage.runs import RunInfo
from storage.sqlite.db import Database
from storage.sqlite.schema import NoteKind, RunLabel, RunNote, RunPhase, RunStatus
from ui.plots import charts, panels
from ui.runs import progress as run_progress
from ui.runs import timeline
from ui.runs.run_filter import ANY_STATUS, RunFilter
from ui.runs.state import RunsSnapshot, RunView
from ui.shared import hints, messages

# "created" never moves; "duration" counts every attempt of a resumed run.
RUN_COLUMNS = ["run", "name", "status", "step", "tags", "note", "created", "duration"]
RUN_COLUMN_WIDTHS = ["12%", "17%", "9%", "7%", "14%", "19%", "12%", "10%"]
NOTE_CHARS = 80  # a note's first line in the runs table, cut there (all of it is in the editor)
METRIC_PAGE = 20_000
DISTRIBUTION_PAGE = 2_000
LOG_PAGE = 500


@dataclass
class RunsUpdate:
    """What changed in one tick; ``None`` means leave that part of the page as it is."""

    runs_table: list[list[Any]] | None = None
    table_empty: str | None = None  # why the runs table is empty ("" when it is not)
    run_choices: list[tuple[str, str]] | None = None
    status: str | None = None  # the selected run's status ("" for none) when it changed
    algorithm: str | None = None  # the selected run's algorithm when the selection changed
    status_md: str | None = None
    error: str | None = None  # "" hides the error box
    hints_md: str | None = None
    figures: dict[str, charts.Figure] = field(default_factory=dict)
    logs: str | None = None
    sample_steps: list[int] | None = None
    progress_html: str | None = None  # bar, ETA and phase, or the summary of an ended run
    metric_names: list[str] | None = None  # every metric of the run, when that set changed
    changed_metrics: set[str] = field(default_factory=set)  # series with new points
    changed_distributions: set[str] = field(default_factory=set)  # quantities with new steps
    clear_message: bool = False  # the last action's message is out of date

    @property
    def empty(self) -> bool:
        return (
            all(
                v is None
                for v in (
                    self.runs_table,
                    self.status_md,
                    self.error,
                    self.logs,
                    self.sample_steps,
                    self.progress_html,
                )
            )
            and not self.figures
        )


def _when(ts: float | None) -> str:
    if ts is None:
        return ""
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _duration(run: RunInfo, now: float) -> str:
    took = run_progress.run_seconds(run, now)
    return "" if took is None else run_progress.clock(took)


def step_text(run: RunInfo) -> str:
    return f"{run.last_step}/{run.total_steps}" if run.total_steps else str(run.last_step)


def note_cell(note: str) -> str:
    """A note as the runs table shows it: its first line, at most :data:`NOTE_CHARS` long."""
    first = note.strip().splitlines()[0] if note.strip() else ""
    return first if len(first) <= NOTE_CHARS else first[: NOTE_CHARS - 1] + "…"


def empty_list_text(total: int, shown: int, run_filter: RunFilter) -> str:
    """Why the runs table shows no row, and what to do ("" when it shows some)."""
    if shown:
        return ""
    if not total:
        return "No runs yet: start one in the **Train** tab."
    what = [f"“{messages.escape(run_filter.query)}”"] if run_filter.query else []
    if run_filter.status != ANY_STATUS:
        what.append(f"status {messages.escape(run_filter.status)}")
    return (
        f"No run of your {total} matches {' and '.join(what)}: "
        "clear the search or pick another status."
    )


def runs_table(
    runs: list[RunInfo],
    now: float | None = None,
    labels: Mapping[str, RunLabel] | None = None,
) -> list[list[Any]]:
    """Rows of the run list in the order given, in :data:`RUN_COLUMNS` order (the user's tags and
    note are plain text cells: the table does not render them as HTML)."""
    now = time.time() if now is None else now
    labels = labels or {}
    return [
        [
            r.id,
            r.name,
            str(r.status),
            step_text(r),
            ", ".join(labels[r.id].tags) if r.id in labels else "",
            note_cell(labels[r.id].note) if r.id in labels else "",
            _when(r.created_at),
            _duration(r, now),
        ]
        for r in runs
    ]


def run_choices(runs: list[RunInfo]) -> list[tuple[str, str]]:
    """Dropdown choices ``(label, run id)``."""
    return [
        (f"{r.name} · {r.status}" if r.name != r.id else f"{r.id} · {r.status}", r.id) for r in runs
    ]


def default_selection(runs: list[RunInfo]) -> str | None:
    """The run to show when a page opens: the newest running one, else the newest."""
    running = [r for r in runs if str(r.status) == "running"]
    pick = running[0] if running else (runs[0] if runs else None)
    return None if pick is None else pick.id


def status_markdown(run: RunInfo | None, stopping: bool = False) -> str:
    """The run's name, status (``stopping…`` between a stop request and the stop), algorithm,
    step and id, with what the status means."""
    if run is None:
        return "No run selected. Start one in the **Train** tab, or pick one from the list."
    stopping = stopping and run.status == RunStatus.RUNNING
    lines = [
        f"### {messages.escape(run.name)}",
        f"**{'stopping…' if stopping else run.status}** · {run.algorithm.upper()} · "
        f"step {step_text(run)} · id `{run.id}`"
        + (f" · attempt {run.attempt}" if run.attempt > 1 else ""),
    ]
    # A running run's phase is shown under the progress bar instead of a generic "Training".
    hint = "" if run.status == RunStatus.RUNNING else hints.status_hint(str(run.status))
    if hint:
        lines.append(f"<small>{hint}</small>")
    if run.error_message:
        lines.append(f"**Error:** {messages.escape(run.error_message)}")
    return "\n\n".join(lines)


def error_text(run: RunInfo | None) -> str:
    """The failed run's traceback (with its message first), or "" when there is none."""
    if run is None or not (run.error_message or run.error_traceback):
        return ""
    return "\n\n".join(x for x in (run.error_message, run.error_traceback) if x)


def notes_markdown(notes: Sequence[RunNote]) -> list[str]:
    """The run's notes (what the worker found: a constant reward component, a retry), each a
    warning with the step it was written at."""
    return [
        messages.warn(
            f"{_NOTE_TITLES.get(n.kind, 'Note')} (step {n.step}): {messages.escape(n.message)}"
        )
        for n in notes
    ]


_NOTE_TITLES = {
    NoteKind.CONSTANT_COMPONENT: "Reward gives no signal",
    NoteKind.OUT_OF_MEMORY_RETRY: "Retried after running out of memory",
    NoteKind.SKIPPED_UPDATE: "Update skipped: gradients not finite",
    NoteKind.FINAL_SAVE_FAILED: "Final model not saved",
    NoteKind.DISK_SPACE_LOW: "Disk space is short",
    NoteKind.CRITIC_NOT_LEARNING: "PPO's critic is not learning",
}


def hints_markdown(run: RunInfo | None, view: RunView, notes: Sequence[RunNote] = ()) -> str:
    if run is None:
        return ""
    found = hints.run_hints(run.algorithm, view.latest())
    lines = notes_markdown(notes) + [messages.hint(messages.escape(h)) for h in found]
    return "\n\n".join(lines)


def all_figures(
    view: RunView, options: charts.ChartOptions | None = None
) -> dict[str, charts.Figure]:
    return {
        p.key: charts.panel_figure(p, view.series, options, view.run_id, view.clock)
        for p in panels.PANELS
    }


def new_distributions(db: Database, view: RunView) -> set[str]:
    """Read the open run's distribution rows past the view's cursor (written with the samples of
    a step, so read when the run moved); the names that got a step."""
    changed: set[str] = set()
    while view.run_id is not None:
        history = view.distributions
        rows, cursor = distribution_store.distributions_since(
            db, view.run_id, history.cursor, limit=DISTRIBUTION_PAGE
        )
        changed |= history.absorb(rows, cursor)
        if len(rows) < DISTRIBUTION_PAGE:
            break
    return changed


class _Kept:
    """The selection argument of a timer tick: whatever the view shows."""


KEPT = _Kept()


def poll(
    db: Database,
    view: RunView,
    selected: str | _Kept | None = KEPT,
    *,
    owner: str | None = None,
    force: bool = False,
    options: charts.ChartOptions | None = None,
    run_filter: RunFilter | None = None,
) -> RunsUpdate:
    """One tick of the Runs view (``force``: redraw everything), its charts drawn as ``options``
    say, the runs table as ``run_filter`` says (the run picker lists every run).

    ``selected`` is the run a selection event picked; a timer tick passes none (:data:`KEPT`) and
    never changes the selection, whatever the page held when it was sent.

    With ``owner`` (a viewer's :attr:`~ui.access.identity.Viewer.scope`), only that owner's runs are
    listed and read; a selected run of someone else shows as no run at all.
    """
    update = RunsUpdate()
    snapshot = RunsSnapshot(progress_store.run_progress(db, owner=owner))
    run_filter = run_filter or RunFilter()
    list_key = (snapshot.list_key(), run_filter)
    runs: list[RunInfo] | None = None
    if force or list_key != view.list_key:
        runs = run_store.list_runs(db, owner=owner)
        labels = label_store.labels_of(db, [r.id for r in runs])
        shown = run_filter.apply(runs, labels)
        update.runs_table = runs_table(shown, labels=labels)
        update.table_empty = empty_list_text(len(runs), len(shown), run_filter)
        update.run_choices = run_choices(runs)
        view.list_key = list_key
    if not isinstance(selected, _Kept):
        selected = selected if isinstance(selected, str) else None
        if selected != view.run_id:
            view.select(selected)
            force = True
    progress = snapshot.get(view.run_id)
    if view.run_id is None or progress is None:
        if force or view.status is not None:
            view.mark_shown(None)
            update.status = ""
            update.status_md = status_markdown(None)
            update.error = ""
            update.hints_md = ""
            update.figures = all_figures(view, options)
            update.logs = ""
            update.sample_steps = []
            update.progress_html = ""
            update.metric_names = []
        return update

    changed: set[str] = set()
    known = set(view.series)
    while view.needs_metrics(progress):
        points, cursor = metric_store.metrics_since(db, view.run_id, view.cursor, limit=METRIC_PAGE)
        changed |= view.absorb(points, cursor)
        if len(points) < METRIC_PAGE:
            break
    progressed = view.progress_changed(progress)
    update.changed_metrics = changed
    if force or set(view.series) != known:
        update.metric_names = sorted(view.series)
    run: RunInfo | None = None
    if force or progressed or changed:
        run = run_store.get_run(db, view.run_id, owner=owner)
        view.mark_shown(progress)
        update.status = "" if run is None else str(run.status)
        update.clear_message = view.message_outlived(update.status)
        if force and run is not None:
            update.algorithm = run.algorithm
        update.error = error_text(run)
        update.hints_md = hints_markdown(run, view, note_store.notes_of_run(db, view.run_id))
        gaps = len(view.clock.gaps) if view.clock else 0
        view.clock = None if run is None else timeline.read_clock(db, run, view.series)
        if force or (view.clock and len(view.clock.gaps) != gaps):  # a new gap: on every chart
            update.figures = all_figures(view, options)
        else:
            keys = panels.changed_panels(changed)
            update.figures = {
                p.key: charts.panel_figure(p, view.series, options, view.run_id, view.clock)
                for p in panels.PANELS
                if p.key in keys
            }
        update.sample_steps = sample_store.sample_steps(db, view.run_id)
        update.changed_distributions = new_distributions(db, view)
    got = False
    if run is not None or progress.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        # An active run's log says what it is doing (the phase) even between steps.
        lines, log_cursor = log_store.logs_since(db, view.run_id, view.log_cursor, limit=LOG_PAGE)
        got = view.absorb_logs(
            (f"{_when(e.time)} {e.level:<7} {e.message}" for e in lines), log_cursor
        )
        if got or force:
            update.logs = "\n".join(view.log_lines)
    if run is not None or got:
        run = run or run_store.get_run(db, view.run_id, owner=owner)
        if run is not None and run.is_terminal and view.stop_asked == run.id:
            view.stop_asked = None  # the stop happened; a resumed attempt is not stopping
        asked = view.stop_asked == view.run_id
        update.progress_html = run_progress.progress_html(run, view, asked)
        stopping = run is not None and (asked or view.phase == RunPhase.STOPPING)
        update.status_md = status_markdown(run, stopping)
    return update
