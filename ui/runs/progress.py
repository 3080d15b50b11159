"""Progress you can read on the run view: a bar with step N of M and an ETA, what the worker is
doing now, and a summary card once a run has ended (no Gradio here).

The phase is data: the worker records each phase it enters (``storage.records.phases``), and the
view's one progress query per tick reads the newest; rewording a log line changes nothing here.
"""

from __future__ import annotations

import html
import time

from engine.tracking import metric_names as m
from storage.runs import RunInfo
from storage.sqlite.schema import RunPhase, RunStatus
from ui.plots.intervals import wilson_interval
from ui.plots.series import Series
from ui.runs.state import RunView

# What each phase the worker records (storage.sqlite.schema.RunPhase) reads as under the bar.
PHASE_TEXT: dict[RunPhase, str] = {
    RunPhase.STARTING: "Starting the worker",
    RunPhase.LOADING_MODEL: "Loading the model",
    RunPhase.RESUMING: "Resuming from the last checkpoint",
    RunPhase.FIRST_GENERATION: "Generating the first completions",
    RunPhase.TRAINING: "Training: generating completions and updating the policy",
    RunPhase.EVALUATING: "Evaluating on held-out prompts",
    RunPhase.SAVING_CHECKPOINT: "Saving checkpoint",
    RunPhase.STOPPING: "Stopping: finishing the step and saving a checkpoint",
    RunPhase.TIME_BUDGET: "Time budget reached: saving a checkpoint",
    RunPhase.FINISHING: "Finishing from the last checkpoint",
    RunPhase.SAVING_FINAL: "Saving the final model",
}
ETA_WINDOW = 10  # steps whose mean time predicts the rest


def phase(run: RunInfo, recorded: str | None, stop_asked: bool = False) -> str:
    """What an active run is doing now, in words ("" for a run that is not active), from the
    phase its worker ``recorded`` last in this attempt. Before the new worker records one, a
    resumed run is resuming and a new one starting (the view read "Training" for seconds after
    Resume); a run past step 0 from before phases were recorded is training."""
    if run.status == RunStatus.QUEUED:
        return "Queued: waiting for a free training slot"
    if run.status != RunStatus.RUNNING:
        return ""
    if stop_asked:
        return PHASE_TEXT[RunPhase.STOPPING]
    if recorded:
        return PHASE_TEXT[RunPhase(recorded)]
    if run.attempt > 1:
        return PHASE_TEXT[RunPhase.RESUMING]
    return PHASE_TEXT[RunPhase.STARTING if run.last_step == 0 else RunPhase.TRAINING]


def eta_seconds(run: RunInfo, series: dict[str, Series]) -> float | None:
    """Seconds left: the mean of the last :data:`ETA_WINDOW` step times times the steps left."""
    times = [v for v in series.get(m.STEP_TIME, Series()).values[-ETA_WINDOW:] if v is not None]
    if not times or not run.total_steps:
        return None
    return sum(times) / len(times) * max(0, run.total_steps - run.last_step)


def clock(seconds: float) -> str:
    """``1:02:03`` or ``2:03``."""
    minutes, secs = divmod(int(max(0.0, seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_html(run: RunInfo | None, view: RunView, stop_asked: bool = False) -> str:
    """The bar and phase of an active run, the summary card of an ended one ("" for none)."""
    if run is None:
        return ""
    if run.is_terminal:
        return summary_html(run, view.series)
    total = run.total_steps or 0
    share = min(1.0, run.last_step / total) if total else 0.0
    eta = eta_seconds(run, view.series)
    parts = [f"step {run.last_step} of {total}" if total else f"step {run.last_step}"]
    if eta is not None:
        parts.append(f"about {clock(eta)} left")
    doing = phase(run, view.phase, stop_asked)
    return (
        '<div id="run-progress-box">'
        f'<div class="run-progress-text">{html.escape(" · ".join(parts))}</div>'
        '<div class="run-progress-track" style="background:#e5e7eb;border-radius:4px;height:10px">'
        f'<div class="run-progress-fill" style="width:{share:.1%};background:#4f46e5;'
        'height:10px;border-radius:4px"></div></div>'
        f'<div class="run-phase"><em>{html.escape(doing)}…</em></div></div>'
    )


def _first_last(s: Series | None) -> tuple[float, float] | None:
    points = [v for v in (s.values if s else []) if v is not None]
    return (points[0], points[-1]) if points else None


def summary_lines(run: RunInfo, series: dict[str, Series], now: float | None = None) -> list[str]:
    """One line per fact of an ended run: status and steps, duration, held-out accuracy before
    -> after with the best, reward first -> last."""
    of = f" of {run.total_steps}" if run.total_steps else ""
    lines = [f"{run.status} at step {run.last_step}{of}"]
    took = duration_text(run, now)
    if took:
        lines.append(f"took {took}")
    accuracy = accuracy_text(series.get(m.EVAL_ACCURACY), series.get(m.EVAL_SCORED))
    if accuracy:
        lines.append(accuracy)
    reward = _first_last(series.get(m.REWARD_TOTAL))
    if reward:
        lines.append(f"reward {reward[0]:.3g} → {reward[1]:.3g}")
    return lines


def attempt_seconds(run: RunInfo, now: float | None = None) -> float | None:
    """How long the run's last attempt ran (to now while it runs)."""
    if run.started_at is None:
        return None
    return (run.ended_at or now or time.time()) - run.started_at


def run_seconds(run: RunInfo, now: float | None = None) -> float | None:
    """How long the run ran over all its attempts (to now while it runs)."""
    last = attempt_seconds(run, now)
    earlier = run.earlier_attempts_s or 0.0
    return None if last is None and not earlier else earlier + (last or 0.0)


def duration_text(run: RunInfo, now: float | None = None) -> str:
    """``13:41`` (one attempt), ``13:41 over 2 attempts (last 1:16)`` after a resume, "" before
    the run started."""
    total = run_seconds(run, now)
    if total is None:
        return ""
    last = attempt_seconds(run, now)
    if run.attempt > 1 and run.earlier_attempts_s and last is not None:
        return f"{clock(total)} over {run.attempt} attempts (last {clock(last)})"
    return clock(total)


def accuracy_text(accuracy: Series | None, scored: Series | None = None) -> str:
    """``held-out accuracy 30.0% → 40.0% (95% interval 31-50% of 100; best 45.0% at step 5)``,
    or "" without points; the interval (``ui.plots.intervals``) where ``scored`` has the last
    evaluation's n."""
    ends = _first_last(accuracy)
    if accuracy is None or not ends:
        return ""
    best_at = max(
        (i for i, v in enumerate(accuracy.values) if v is not None),
        key=lambda i: accuracy.values[i],
    )
    n_at = dict(zip(scored.steps, scored.values, strict=True)) if scored else {}
    last_n = next(
        (
            n_at.get(s)
            for s, v in zip(accuracy.steps[::-1], accuracy.values[::-1], strict=True)
            if v is not None
        ),
        None,
    )
    interval = ""
    if last_n:
        lo, hi = wilson_interval(ends[1], int(last_n))
        interval = f"95% interval {lo:.0%}-{hi:.0%} of {int(last_n)}; "
    return (
        f"held-out accuracy {ends[0]:.1%} → {ends[1]:.1%} "
        f"({interval}best {accuracy.values[best_at]:.1%} at step {accuracy.steps[best_at]})"
    )


def summary_line(run: RunInfo, accuracy: Series | None, now: float | None = None) -> str:
    """One line per run for Compare: held-out accuracy before -> after (best), steps, duration."""
    parts = [accuracy_text(accuracy) or "no held-out evaluation", f"{run.last_step} steps"]
    took = run_seconds(run, now)
    if took is not None:
        parts.append(clock(took))
    return " · ".join(parts)


def summary_html(run: RunInfo, series: dict[str, Series]) -> str:
    items = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(run, series))
    return f'<div id="run-summary"><strong>Summary</strong><ul>{items}</ul></div>'
