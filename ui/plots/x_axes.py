"""The x axes a chart can be drawn against, as W&B and trackio offer them, and the stop/resume
gaps marked on them (no Gradio, no storage here: :mod:`ui.runs.timeline` reads what they need).

- ``step``: the optimizer step.
- ``time``: minutes since the run started: its first worker's start (the first ``starting``
  phase row), W&B's "Relative Time (Wall)". A stopped-and-resumed run's minutes go on through
  the stop; the gap is shaded. A run with no phase rows (written before they were recorded)
  counts from its first point, and the axis title says so.
- ``wall``: the wall clock (the server's local time, as the runs table and the log show it).
- ``completions``: completions trained on, ``step x completions per step`` (the run config's
  ``training.prompts_per_step x generation.num_generations``: the step's batch).
- ``tokens``: tokens seen, the cumulative ``perf/num_tokens`` the trainer logs (TRL's
  ``num_input_tokens_seen``, prompt plus completion tokens over every process; our PPO counts
  the same), restored from the checkpoint on resume. Steps without a logged count (an
  evaluation between log steps) are placed by linear interpolation.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ui.plots.series import Series

STEP, RELATIVE, WALL, COMPLETIONS, TOKENS = "step", "time", "wall", "completions", "tokens"
X_AXES = (STEP, RELATIVE, WALL, COMPLETIONS, TOKENS)
TIME_AXES = (RELATIVE, WALL)
STARTING = "starting"  # the phase a worker records first: an attempt begins
RESUMING = "resuming"  # with the checkpoint step it loads

#: (label, value) of the x-axis switch; the values are what ``ChartOptions.x`` takes.
CHOICES = [
    ("step", STEP),
    ("relative time", RELATIVE),
    ("wall clock", WALL),
    ("completions", COMPLETIONS),
    ("tokens", TOKENS),
]
# The CSV's column for the x value (the step has its own column beside it).
X_NAMES = {STEP: "step", RELATIVE: "minutes", WALL: "time", COMPLETIONS: "completions"}
X_NAMES[TOKENS] = "tokens"
# What a chart says when no point has an x on the axis picked.
UNPLACED = {
    STEP: "no points yet",  # charts.NO_POINTS
    RELATIVE: "no point times logged",
    WALL: "no point times logged",
    COMPLETIONS: "no batch size in this run's config: pick another x axis",
    TOKENS: "no token count (perf/num_tokens) logged by this run: pick another x axis",
}
GAP_FILL = "rgba(107, 114, 128, 0.15)"
GAP_LINE = "#6b7280"


@dataclass(frozen=True)
class Gap:
    """A stretch with the run not training: from the last moment its previous attempt recorded
    (a point or a phase) to the start of attempt ``attempt``, which resumed from ``from_step``
    (its checkpoint; ``None``: unknown or from scratch)."""

    begin: float
    end: float
    attempt: int
    from_step: int | None = None


@dataclass(frozen=True, eq=False)
class RunClock:
    """What a run's x axes other than the step need. ``start`` is the run's first worker start
    (``from_points``: no phase row, it is the first point's time instead)."""

    start: float | None = None
    from_points: bool = True
    gaps: tuple[Gap, ...] = ()
    completions_per_step: int | None = None
    tokens: Series | None = field(default=None, repr=False)


def _first_point(series: Iterable[Series]) -> float | None:
    return min((s.times[0] for s in series if s.times), default=None)


def _last_point_before(series: Iterable[Series], moment: float) -> float | None:
    last = None
    for s in series:
        i = bisect.bisect_left(s.times, moment)  # a series' times ascend with its steps
        if i and (last is None or s.times[i - 1] > last):
            last = s.times[i - 1]
    return last


def run_clock(
    phases: Sequence[tuple[str, int | None, float]],
    series: Mapping[str, Series],
    completions_per_step: int | None = None,
    tokens: Series | None = None,
) -> RunClock:
    """The clock of a run from its phase rows ``(phase, step, time)``, oldest first, and its
    series: each ``starting`` row after the first begins an attempt, and the gap before it runs
    from the previous attempt's last point or phase row to it."""
    starts = [i for i, (phase, _, _) in enumerate(phases) if str(phase) == STARTING]
    gaps = []
    ends = [*starts[2:], len(phases)]  # where each later attempt's rows end
    for n, (i, nxt) in enumerate(zip(starts[1:], ends, strict=False)):
        moment = phases[i][2]
        last_point = _last_point_before(series.values(), moment)
        recorded = [t for _, _, t in phases[:i]] + ([] if last_point is None else [last_point])
        begin = max(recorded)
        resumed = next((step for phase, step, _ in phases[i:nxt] if str(phase) == RESUMING), None)
        gaps.append(Gap(begin, moment, n + 2, resumed))
    if phases:
        return RunClock(phases[0][2], False, tuple(gaps), completions_per_step, tokens)
    return RunClock(_first_point(series.values()), True, (), completions_per_step, tokens)


def _wall(t: float) -> str:
    # Plotly reads "YYYY-MM-DD HH:MM:SS.fff" as a date on a date axis.
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def tokens_at(steps: Sequence[int], tokens: Series | None) -> list[float | None]:
    """Tokens seen by each step: the logged count, linearly interpolated between logged steps
    (0 before step 1); ``None`` past the last count."""
    known = [(0, 0.0)] if not tokens or not tokens.steps or tokens.steps[0] > 0 else []
    if tokens:
        known += [(s, v) for s, v in zip(tokens.steps, tokens.values, strict=True) if v is not None]
    at = [s for s, _ in known]
    out: list[float | None] = []
    for step in steps:
        i = bisect.bisect_left(at, step)
        if i < len(at) and at[i] == step:
            out.append(known[i][1])
        elif 0 < i < len(at):
            (s0, v0), (s1, v1) = known[i - 1], known[i]
            out.append(v0 + (v1 - v0) * (step - s0) / (s1 - s0))
        else:
            out.append(None)
    return out


def x_values(s: Series, axis: str, clock: RunClock, keep: Sequence[int]) -> list:
    """The x of the points ``keep`` (indices) of ``s`` on ``axis``; ``None`` where it is not
    known (no time, no batch size, no token count yet): Plotly leaves those points out."""
    steps = [s.steps[i] for i in keep]
    if axis in TIME_AXES:
        if len(s.times) != len(s.steps) or (axis == RELATIVE and clock.start is None):
            return [None] * len(keep)
        if axis == WALL:
            return [_wall(s.times[i]) for i in keep]
        return [(s.times[i] - clock.start) / 60.0 for i in keep]
    if axis == COMPLETIONS:
        n = clock.completions_per_step
        return [step * n if n else None for step in steps]
    if axis == TOKENS:
        return tokens_at(steps, clock.tokens)
    return steps


def axis_layout(axis: str, clocks: Iterable[RunClock]) -> dict:
    """The x axis's title and ticks for ``axis`` (the step's are :func:`charts.step_axis`)."""
    if axis == RELATIVE:
        known = all(not c.from_points for c in clocks)
        since = "the run started" if known else "the first point"
        return {"title": {"text": f"minutes since {since}"}}
    if axis == WALL:
        return {"type": "date", "title": {"text": "wall clock (server time)"}}
    if axis == COMPLETIONS:
        title = "completions trained on (step × completions per step)"
        return {"title": {"text": title}, "tickformat": "~s"}
    if axis == TOKENS:
        return {"title": {"text": "tokens seen (prompt + completion)"}, "tickformat": "~s"}
    return {}


def _x_of_moment(t: float, axis: str, clock: RunClock) -> float | str | None:
    if axis == WALL:
        return _wall(t)
    return None if clock.start is None else (t - clock.start) / 60.0


def _x_of_step(step: int, axis: str, clock: RunClock) -> float | None:
    if axis == COMPLETIONS:
        return step * clock.completions_per_step if clock.completions_per_step else None
    if axis == TOKENS:
        return tokens_at([step], clock.tokens)[0]
    return step


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def _label(x: float | str, text: str, hover: str, color: str) -> dict:
    return {
        "x": x,
        "xref": "x",
        "y": 1,
        "yref": "paper",
        "yanchor": "top",
        "xanchor": "left",
        "text": text,
        "hovertext": hover,
        "showarrow": False,
        "font": {"size": 10, "color": color},
    }


def dotted_vline(x: float | str, color: str) -> dict:
    """A dotted vertical line across the plot at ``x`` (a resume, a probe's onset)."""
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": {"color": color, "width": 1, "dash": "dot"},
    }


def gap_marks(clock: RunClock, axis: str, color: str = GAP_LINE) -> tuple[list, list]:
    """``(shapes, annotations)`` marking the run's stop/resume gaps: on a time axis a shaded
    band over the time it did not train and a dotted line where the next attempt started; on
    the step, completion and token axes a dotted line at the step it resumed from."""
    shapes: list[dict] = []
    notes: list[dict] = []
    for gap in clock.gaps:
        what = f"attempt {gap.attempt}"
        since = f" from step {gap.from_step}" if gap.from_step is not None else ""
        hover = (
            f"not training {_minutes(gap.end - gap.begin)} "
            f"({_wall(gap.begin)[:19]} → {_wall(gap.end)[:19]}); {what} resumed{since}"
        )
        if axis in TIME_AXES:
            begin, end = _x_of_moment(gap.begin, axis, clock), _x_of_moment(gap.end, axis, clock)
            if begin is None or end is None:
                continue
            band = {"type": "rect", "xref": "x", "yref": "paper", "x0": begin, "x1": end}
            band.update(y0=0, y1=1, fillcolor=GAP_FILL, line={"width": 0}, layer="below")
            shapes += [band, dotted_vline(end, color)]
            notes.append(_label(end, f"↻ {what}", hover, color))
        elif gap.from_step is not None:
            x = _x_of_step(gap.from_step, axis, clock)
            if x is None:
                continue
            shapes.append(dotted_vline(x, color))
            notes.append(_label(x, f"↻ {what}", hover, color))
    return shapes, notes
