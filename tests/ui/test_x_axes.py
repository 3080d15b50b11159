"""The charts' x axes other than the step, the stop/resume gaps marked on them, and the EMA's
window band, on the figure data."""

import datetime as dt
import math

import pytest

from ui.plots import charts, lines, panels, x_axes
from ui.plots.series import Series
from ui.plots.x_axes import Gap, RunClock, run_clock

T0 = 1_800_000_000.0  # the run's first worker start


def _panel(key: str) -> panels.Panel:
    return next(p for p in panels.PANELS if p.key == key)


def stopped_and_resumed() -> tuple[list, dict[str, Series]]:
    """Phase rows and series of a run trained steps 1-3, stopped, resumed 10 minutes later
    from its checkpoint at step 2, trained steps 3-4 again."""
    phases = [
        ("starting", None, T0),
        ("training", 1, T0 + 60),
        ("stopping", 3, T0 + 200),
        ("starting", None, T0 + 900),
        ("resuming", 2, T0 + 910),
        ("training", 3, T0 + 960),
    ]
    reward = Series()
    for step, at in ((1, 120), (2, 150), (3, 180), (3, 1000), (4, 1030)):
        reward.add(step, step / 10, T0 + at)  # the second step 3 replaces the first
    tokens = Series([1, 2, 4], [100.0, 200.0, 400.0], [T0 + 120, T0 + 150, T0 + 1030])
    return phases, {"reward/total": reward, "perf/num_tokens": tokens}


def test_a_resumed_run_has_one_gap_from_its_last_record_to_the_next_start():
    phases, series = stopped_and_resumed()
    clock = run_clock(phases, series, 16, series["perf/num_tokens"])
    assert clock.start == T0 and not clock.from_points
    # The stop's phase row (T0 + 200) is later than the last point kept before it (T0 + 150).
    assert clock.gaps == (Gap(T0 + 200, T0 + 900, 2, 2),)
    # A third attempt resumed from scratch: no step to mark on the step axis.
    third = [*phases, ("starting", None, T0 + 2000)]
    later = run_clock(third, series).gaps
    assert [g.attempt for g in later] == [2, 3]
    assert later[1] == Gap(T0 + 1030, T0 + 2000, 3, None)  # after the last point
    # No phase rows (a run written before they were): timed from its first point, no gaps.
    old = run_clock([], series)
    assert (old.start, old.from_points, old.gaps) == (T0 + 120, True, ())


def test_each_x_axis_places_the_points_of_a_series():
    phases, series = stopped_and_resumed()
    reward = series["reward/total"]
    clock = run_clock(phases, series, 16, series["perf/num_tokens"])
    keep = range(len(reward.steps))
    assert x_axes.x_values(reward, "step", clock, keep) == [1, 2, 3, 4]
    # From the run's start, not from its first point (2 minutes later), through the stop.
    assert x_axes.x_values(reward, "time", clock, keep) == pytest.approx(
        [2, 2.5, 1000 / 60, 1030 / 60]
    )
    wall = x_axes.x_values(reward, "wall", clock, keep)
    assert wall[0] == dt.datetime.fromtimestamp(T0 + 120).strftime("%Y-%m-%d %H:%M:%S.000")
    assert x_axes.x_values(reward, "completions", clock, keep) == [16, 32, 48, 64]
    # Step 3 logged no token count: placed between steps 2 and 4.
    assert x_axes.x_values(reward, "tokens", clock, keep) == [100.0, 200.0, 300.0, 400.0]
    # Unknown: no batch size, no token count yet, no time.
    assert x_axes.x_values(reward, "completions", RunClock(), keep) == [None] * 4
    assert x_axes.tokens_at([0, 5], series["perf/num_tokens"]) == [0.0, None]
    untimed = Series([1, 2], [0.1, 0.2])
    assert x_axes.x_values(untimed, "time", clock, [0, 1]) == [None, None]


def test_the_axis_title_says_what_it_counts_from():
    phases, series = stopped_and_resumed()
    clock = run_clock(phases, series)
    title = lambda axis, *c: x_axes.axis_layout(axis, c)["title"]["text"]  # noqa: E731
    assert title("time", clock) == "minutes since the run started"
    assert title("time", clock, run_clock([], series)) == "minutes since the first point"
    assert x_axes.axis_layout("wall", [clock])["type"] == "date"
    assert "tokens seen" in title("tokens", clock)
    assert "completions" in title("completions", clock)


def test_a_panel_marks_the_gap_on_time_axes_and_the_resumed_step_on_the_others():
    phases, series = stopped_and_resumed()
    clock = run_clock(phases, series, 16, series["perf/num_tokens"])
    reward = _panel("reward")

    def figure(x):
        return charts.panel_figure(reward, series, charts.ChartOptions(x=x), "grpo-a", clock)

    timed = figure("time")
    band, line = timed["layout"]["shapes"]
    assert (band["type"], band["x0"], band["x1"]) == ("rect", pytest.approx(200 / 60), 15.0)
    assert (line["type"], line["x0"], line["x1"]) == ("line", 15.0, 15.0)
    note = timed["layout"]["annotations"][-1]
    assert "attempt 2" in note["text"] and "not training 12 min" in note["hovertext"]
    assert "from step 2" in note["hovertext"]
    assert timed["layout"]["title"]["text"].endswith("(by relative time)")
    assert timed["layout"]["meta"]["xlink"] == "grpo-a|time"
    wall = figure("wall")["layout"]
    assert (
        wall["shapes"][0]["x1"]
        == x_axes.x_values(Series([0], [0.0], [T0 + 900]), "wall", clock, [0])[0]
    )
    # On the step axis, the completions and the tokens: a line where the run resumed from.
    assert [s["x0"] for s in figure("step")["layout"]["shapes"]] == [2]
    assert [s["x0"] for s in figure("completions")["layout"]["shapes"]] == [32]
    assert [s["x0"] for s in figure("tokens")["layout"]["shapes"]] == [200.0]
    never_stopped = charts.panel_figure(reward, series, charts.ChartOptions(x="time"))
    assert "shapes" not in never_stopped["layout"]


def test_chart_options_take_every_x_axis_and_nothing_else():
    for axis in x_axes.X_AXES:
        assert charts.ChartOptions.from_inputs(0, axis, False).x == axis
    assert charts.ChartOptions.from_inputs(0, "minutes", False).x == "step"
    assert [value for _, value in x_axes.CHOICES] == list(x_axes.X_AXES)


def naive_envelope(values, window):
    lows, highs = [], []
    for i, v in enumerate(values):
        seen = [w for w in values[max(0, i - window + 1) : i + 1] if w is not None]
        gap = v is None or not math.isfinite(v)
        lows.append(None if gap else min(w for w in seen if math.isfinite(w)))
        highs.append(None if gap else max(w for w in seen if math.isfinite(w)))
    return lows, highs


def test_the_smoothing_window_band_is_the_trailing_min_and_max():
    assert [lines.smoothing_window(w) for w in (0.0, 0.6, 0.9, 0.99)] == [1, 4, 19, 199]
    values = [3.0, 1.0, None, 4.0, 1.0, 5.0, float("nan"), 9.0, 2.0, 6.0, 5.0, 3.0, 5.0]
    for window in (1, 2, 3, 5, 20):
        assert lines.window_envelope(values, window) == naive_envelope(values, window)


def test_the_band_follows_the_thinned_line():
    n = lines.MAX_POINTS * 2 + 1
    s = Series(list(range(n)), [float(i % 7) for i in range(n)])
    high, low, raw, smooth = lines.series_lines("x", s, "#2563eb", 2, charts.ChartOptions(0.9))
    assert len(high["x"]) == len(low["x"]) == len(smooth["x"]) == len(raw["x"]) < n
    assert all(lo <= y <= hi for lo, y, hi in zip(low["y"], smooth["y"], high["y"], strict=True))
    assert low["fillcolor"] == "rgba(37, 99, 235, 0.12)"


def test_a_chart_with_no_point_on_the_axis_picked_says_why():
    series = {"reward/total": Series([1, 2], [0.1, 0.2], [T0, T0 + 60])}
    fig = charts.panel_figure(_panel("reward"), series, charts.ChartOptions(x="tokens"))
    assert "perf/num_tokens" in fig["layout"]["annotations"][-1]["text"]
    timed = charts.panel_figure(_panel("reward"), series, charts.ChartOptions(x="time"))
    assert "annotations" not in timed["layout"]
