import json

import pytest

from ui.plots import charts, lines, panels
from ui.plots.series import Series


def test_reward_panel_draws_total_first_then_each_component():
    series = {
        "rewards/format": Series([1, 2], [0.5, 1.0]),
        "reward/total": Series([1, 2], [0.7, 0.9]),
        "rewards/correctness": Series([1, 2], [0.2, 0.4]),
        "loss/policy": Series([1, 2], [0.0, 0.0]),
    }
    reward = next(p for p in panels.PANELS if p.key == "reward")
    fig = charts.panel_figure(reward, series)
    assert [t["name"] for t in fig["data"]] == ["reward/total", "correctness", "format"]
    assert fig["data"][0]["y"] == [0.7, 0.9]


def test_changed_panels_follow_metric_names():
    assert panels.changed_panels(["rewards/format"]) == {"reward"}
    assert panels.changed_panels(["completions/clipped_ratio", "eval/accuracy"]) == {
        "signal",
        "eval",
    }
    assert panels.changed_panels(["train/epoch"]) == set()
    assert panels.changed_panels(["rewards/format/std"]) == set()  # a spread, not a level


def test_every_chart_metric_of_the_issue_has_a_panel():
    for name in [
        "reward/total",
        "rewards/correctness",
        "loss/policy",
        "policy/kl",
        "policy/entropy",
        "policy/clip_ratio/region_mean",
        "completions/mean_length",
        "completions/clipped_ratio",
        "reward/zero_std_fraction",
        "eval/accuracy",
        "eval/strict_accuracy",
        "eval/format_rate",
        "perf/tokens_per_s",
        "ppo/approx_kl",
        "policy/clip_ratio/region_mean",
        "ppo/explained_variance",
        "loss/value",
        "train/world_model_loss",
        "tools/call_frequency",
        "tools/failure_frequency",
    ]:
        assert panels.changed_panels([name]), name


def test_an_agent_run_draws_its_tool_rates_and_the_world_model_loss_on_its_own_axis():
    names = ["loss/policy", "train/world_model_loss", "tools/call_frequency"]
    drawn = panels.panels_for(names)
    assert drawn["loss"] == ["loss/policy", "train/world_model_loss"]
    assert drawn["tools"] == ["tools/call_frequency"]
    loss = next(p for p in panels.PANELS if p.key == "loss")
    assert "train/world_model_loss" in loss.right_axis


def test_empty_panel_says_it_waits_and_long_series_are_thinned():
    loss = next(p for p in panels.PANELS if p.key == "loss")
    empty = charts.panel_figure(loss, {})
    assert empty["data"] == []
    assert empty["layout"]["annotations"][0]["text"] == "no points yet"
    steps = list(range(10_001))
    x, y = lines.thin(steps, [float(s) for s in steps])
    assert len(x) <= lines.MAX_POINTS + 1
    assert x[0] == 0 and x[-1] == 10_000 and y[-1] == 10_000.0


def test_json_turns_nan_into_gaps():
    fig = charts.overlay_figure("reward/total", {"r1": Series([1, 2], [float("nan"), 1.0])})
    data = json.loads(charts.to_json(fig))
    assert data["data"][0]["y"] == [None, 1.0]


def test_contributions_stack_relative_with_totals():
    fig = charts.contribution_figure(
        ["0", "1"], {"correctness": [1.0, None], "format": [0.5, -0.25]}, [1.5, -0.25]
    )
    assert fig["layout"]["barmode"] == "relative"
    assert fig["data"][0]["y"] == [1.0, 0.0]  # not scored draws no bar
    assert fig["data"][-1]["name"] == "total"


def test_step_ticks_are_whole_steps():
    loss = next(p for p in panels.PANELS if p.key == "loss")
    few = charts.panel_figure(loss, {"loss/policy": Series([1, 2, 3], [0.1, 0.2, 0.3])})
    assert few["layout"]["xaxis"]["dtick"] == 1 and few["layout"]["xaxis"]["tickformat"] == "d"
    many = charts.panel_figure(loss, {"loss/policy": Series(list(range(1, 101)), [0.0] * 100)})
    assert "dtick" not in many["layout"]["xaxis"] and many["layout"]["xaxis"]["tickformat"] == "d"


def test_grad_norm_and_learning_rate_have_panels():
    assert panels.changed_panels(["train/grad_norm", "train/learning_rate"]) == {
        "grad_norm",
        "learning_rate",
    }


def test_ema_is_debiased_like_tensorboard_and_skips_gaps():
    assert lines.ema([1.0, None, 3.0], 0.0) == [1.0, None, 3.0]
    smoothed = lines.ema([2.0, 4.0], 0.5)
    assert smoothed[0] == 2.0  # debiased: the first point is itself, not pulled to 0
    assert smoothed[1] == pytest.approx((0.5 * (0.5 * 2.0) + 0.5 * 4.0) / (1 - 0.25), rel=1e-11)


def test_smoothing_draws_the_raw_line_faint_over_the_window_band_behind_the_smoothed_one():
    reward = next(p for p in panels.PANELS if p.key == "reward")
    series = {"reward/total": Series([1, 2, 3], [0.0, 1.0, 0.0], [100.0, 160.0, 220.0])}
    fig = charts.panel_figure(reward, series, charts.ChartOptions(smoothing=0.6))
    high, low, raw, smooth = fig["data"]
    assert raw["opacity"] < 1 and raw["showlegend"] is False and raw["y"] == [0.0, 1.0, 0.0]
    assert smooth["y"] == lines.ema([0.0, 1.0, 0.0], 0.6)
    # The min and max of the EMA's window (4 points at 0.6), filled between, out of the hover.
    assert (low["y"], high["y"]) == ([0.0, 0.0, 0.0], [0.0, 1.0, 1.0])
    assert low["fill"] == "tonexty" and "fill" not in high
    assert {t["hoverinfo"] for t in (high, low, raw)} == {"skip"}
    assert {t["legendgroup"] for t in fig["data"]} == {"reward/total"}  # one toggle hides all
    by_time = charts.panel_figure(reward, series, charts.ChartOptions(x="time", log_y=True))
    assert by_time["data"][0]["x"] == [0.0, 1.0, 2.0]  # minutes since the first point
    assert by_time["layout"]["yaxis"]["type"] == "linear"  # 0 has no place on a log axis
    assert "dtick" not in by_time["layout"]["xaxis"]


def test_chart_options_from_the_page_fall_back_on_bad_values():
    assert charts.ChartOptions.from_inputs("0.5", "time", True) == charts.ChartOptions(
        0.5, "time", True
    )
    for bad in (1.0, -0.1, float("nan"), "x", None):
        assert charts.ChartOptions.from_inputs(bad, "bogus", "yes") == charts.ChartOptions()


def _panel(key: str) -> panels.Panel:
    return next(p for p in panels.PANELS if p.key == key)


def test_a_constant_series_is_drawn_on_a_range_around_its_value_even_smoothed():
    lr = {"train/learning_rate": Series(list(range(1, 41)), [5e-5] * 40)}
    for smoothing in (0.0, 0.8):
        fig = charts.panel_figure(_panel("learning_rate"), lr, charts.ChartOptions(smoothing))
        assert fig["layout"]["yaxis"]["range"] == pytest.approx([2.5e-5, 7.5e-5])  # not -1..1
        assert set(fig["data"][-1]["y"]) == {5e-5}  # no zigzag of rounding noise
    moving = {"train/learning_rate": Series([1, 2], [1e-5, 2e-5])}
    assert "range" not in charts.panel_figure(_panel("learning_rate"), moving)["layout"]["yaxis"]


def test_a_one_point_series_is_a_point_with_smoothing_too():
    eval_ = {"eval/accuracy": Series([0], [0.3])}
    for smoothing in (0.0, 0.6):
        fig = charts.panel_figure(_panel("eval"), eval_, charts.ChartOptions(smoothing))
        assert "markers" in fig["data"][-1]["mode"], smoothing


def test_log_scale_says_why_a_panel_is_empty_and_the_time_axis_leaves_the_legend_room():
    loss = {"loss/policy": Series([1, 2], [-0.1, -0.2])}
    fig = charts.panel_figure(_panel("loss"), loss, charts.ChartOptions(log_y=True))
    assert "linear, not log: loss at or below 0" in fig["layout"]["annotations"][0]["text"]
    fine = charts.panel_figure(_panel("loss"), {"loss/policy": Series([1], [0.5])})
    assert "annotations" not in fine["layout"]
    timed = charts.panel_figure(
        _panel("loss"),
        {"loss/policy": Series([1, 2], [0.5, 0.4], [0.0, 60.0])},
        charts.ChartOptions(x="time"),
    )
    assert (
        timed["layout"]["legend"]["y"]
        < charts.panel_figure(_panel("loss"), loss)["layout"]["legend"]["y"]
    )
    assert timed["layout"]["hovermode"] == "x unified"


def test_scheduled_weights_have_their_own_panel():
    assert panels.changed_panels(["reward/weight/format"]) == {"weights"}
    assert panels.panels_for(["reward/weight/format", "reward/total"])["weights"] == [
        "reward/weight/format"
    ]


def test_a_zoom_belongs_to_its_run_panel_and_axis_mode_not_to_the_smoothing():
    series = {"reward/total": Series([1, 2], [0.1, 0.2], [0.0, 60.0])}

    def revision(run: str, panel: str = "reward", **options) -> str:
        fig = charts.panel_figure(_panel(panel), series, charts.ChartOptions(**options), run)
        return fig["layout"]["uirevision"]

    assert revision("a") == revision("a", smoothing=0.9)  # a new smoothing keeps the zoom
    assert len({revision("a"), revision("b"), revision("a", "loss")}) == 3
    assert len({revision("a"), revision("a", x="time"), revision("a", log_y=True)}) == 3


def test_every_line_names_its_series_for_the_csv_download():
    series = {"reward/total": Series([1, 2], [0.1, 0.2]), "rewards/format": Series([1], [1.0])}
    fig = charts.panel_figure(
        _panel("reward"), series, charts.ChartOptions(smoothing=0.5), run_id="grpo-aaaa1111"
    )
    assert [t["meta"]["series"] for t in fig["data"]] == [
        "reward/total (max)",
        "reward/total (min)",
        "reward/total",
        "reward/total (smoothed)",
        "format (max)",
        "format (min)",
        "format",
        "format (smoothed)",
    ]
    # The CSV's run column and file name, each point's step (its column by time too), and the
    # link of the charts zoomed and hovered together: this run's, on this x axis.
    link = "grpo-aaaa1111|step"
    assert fig["layout"]["meta"] == {"x_name": "step", "run": "grpo-aaaa1111", "xlink": link}
    assert [t["customdata"] for t in fig["data"]] == [[1, 2]] * 4 + [[1]] * 4
    timed = charts.metrics_figure(
        {"a/x": {"r": Series([1], [1.0], [0.0])}, "a/y": {"r": Series([1], [2.0], [0.0])}},
        {"r": "run one"},
        charts.ChartOptions(x="time"),
    )
    assert [t["meta"]["series"] for t in timed["data"]] == ["run one · a/x", "run one · a/y"]
    assert timed["layout"]["meta"] == {"x_name": "minutes"}


def test_stacked_panels_each_fit_a_constant_series_and_log_scale_says_why_it_is_empty():
    by_metric = {
        "train/learning_rate": {"r": Series([1, 2], [5e-5, 5e-5])},
        "loss/policy": {"r": Series([1, 2], [-0.1, -0.2])},
    }
    fig = charts.metrics_figure(by_metric)
    assert fig["layout"]["yaxis"]["range"] == pytest.approx([2.5e-5, 7.5e-5])
    assert "range" not in fig["layout"]["yaxis2"]
    logged = charts.metrics_figure(
        {"loss/policy": {"r": Series([1], [-0.1])}, "a/b": {"r": Series([1], [0.0])}},
        options=charts.ChartOptions(log_y=True),
    )
    assert "loss/policy, a/b at or below 0" in logged["layout"]["annotations"][0]["text"]


def test_log_scale_leaves_an_axis_with_values_at_or_below_0_linear_and_says_so():
    log = charts.ChartOptions(log_y=True)
    # GRPO's loss crosses 0: a log axis dropped its negative points without a word.
    mixed = {"loss/policy": Series([1, 2, 3], [0.2, -0.1, 0.05])}
    fig = charts.panel_figure(_panel("loss"), mixed, log)
    assert fig["layout"]["yaxis"]["type"] == "linear"
    assert [a["text"] for a in fig["layout"]["annotations"]] == [
        "linear, not log: loss at or below 0"
    ]
    positive = charts.panel_figure(_panel("loss"), {"loss/policy": Series([1, 2], [0.2, 0.1])}, log)
    assert positive["layout"]["yaxis"]["type"] == "log"
    assert not positive["layout"].get("annotations")
    stacked = charts.metrics_figure(
        {"reward/total": {"r": Series([1], [0.5])}, "loss/policy": {"r": Series([1], [-0.1])}},
        options=log,
    )
    assert (stacked["layout"]["yaxis"]["type"], stacked["layout"]["yaxis2"]["type"]) == (
        "log",
        "linear",
    )
    assert "loss/policy at or below 0" in stacked["layout"]["annotations"][-1]["text"]


def test_the_async_rollout_metrics_are_charted_beside_the_logprob_gap():
    names = [
        "gen/logprob_gap",
        "gen/is_ratio_mean",
        "gen/is_clipped_share",
        "perf/staleness_steps",
        "perf/overlap_share",
        "perf/tokens_per_s",
    ]
    drawn = panels.panels_for(names)
    assert sorted(drawn["sampler"]) == sorted(names[:5])
    assert drawn["perf"] == ["perf/tokens_per_s"]


def test_a_series_that_repeats_another_is_drawn_dashed_and_named_its_twin():
    series = {
        "completions/mean_length": Series([1, 2], [40.0, 42.0]),
        "completions/mean_terminated_length": Series([1, 2], [40.0, 42.0]),
        "completions/max_length": Series([1, 2], [60.0, 64.0]),
    }
    data = charts.panel_figure(_panel("length"), series)["data"]
    by_name = {d["meta"]["series"]: d for d in data}
    twin = by_name["completions/mean_terminated_length"]
    assert twin["line"].get("dash") == "dash"
    assert twin["name"] == "completions/mean_terminated_length (= completions/mean_length)"
    assert "dash" not in by_name["completions/mean_length"]["line"]
    assert "dash" not in by_name["completions/max_length"]["line"]  # its own values


def test_held_out_rewards_are_on_their_own_axis_beside_the_rates():
    series = {
        "eval/accuracy": Series([10], [0.4]),
        "eval/format_rate": Series([10], [0.9]),
        "eval/reward_total": Series([10], [2.5]),
        "eval/rewards/correctness": Series([10], [0.4]),
    }
    fig = charts.panel_figure(_panel("eval"), series)
    axes = {d["meta"]["series"]: d.get("yaxis", "y") for d in fig["data"]}
    assert axes == {
        "eval/accuracy": "y",
        "eval/format_rate": "y",
        "eval/reward_total": "y2",
        "eval/rewards/correctness": "y2",
    }
    assert fig["layout"]["yaxis2"]["side"] == "right"


def test_the_kl_and_clip_notes_say_why_they_can_stay_flat():
    kl, clip = _panel("kl"), _panel("clip")
    assert "second forward pass" in kl.note and kl.note_shown_for("grpo")
    assert "num_iterations 1" in clip.note
    assert clip.note_shown_for("grpo") and clip.note_shown_for("rloo")
    assert not clip.note_shown_for("ppo")  # PPO's epochs move its ratios
