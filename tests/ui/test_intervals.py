import pytest

from ui.plots import charts, panels
from ui.plots.intervals import interval_band, wilson_interval
from ui.plots.series import Series
from ui.runs import progress as run_progress


def test_the_wilson_interval_matches_its_published_values():
    # 0 of 10: the upper bound 0.2775 (Brown, Cai & DasGupta 2001 discuss this case); 5 of 10.
    assert wilson_interval(0.0, 10) == pytest.approx((0.0, 0.27753), abs=1e-4)
    assert wilson_interval(0.5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-4)
    # 50 prompts at 50%: +-13 points, the noise the issue saw between evaluations.
    lo, hi = wilson_interval(0.5, 50)
    assert hi - lo == pytest.approx(0.2671, abs=1e-3)


def test_the_interval_is_inside_0_1_holds_its_share_and_mirrors():
    for n in (1, 7, 50, 1000):
        for p in (0.0, 0.1, 0.5, 0.93, 1.0):
            lo, hi = wilson_interval(p, n)
            assert 0.0 <= lo <= p <= hi <= 1.0
            mirrored = wilson_interval(1.0 - p, n)
            assert (lo, hi) == pytest.approx((1.0 - mirrored[1], 1.0 - mirrored[0]))
    assert wilson_interval(0.3, 0) == (0.0, 1.0)  # no trials: anything


def test_the_band_is_two_filled_edges_and_unknown_counts_leave_gaps():
    upper, lower = interval_band([10, 20], [0.5, 0.4], [50.0, None], "#2563eb")
    assert upper["y"][0] == pytest.approx(wilson_interval(0.5, 50)[1])
    assert lower["y"][0] == pytest.approx(wilson_interval(0.5, 50)[0])
    assert upper["y"][1] is None and lower["y"][1] is None
    assert lower["fill"] == "tonexty" and not upper["showlegend"]
    assert interval_band([10], [0.5], [None], "#000") == []


def test_the_eval_panel_draws_the_band_under_the_accuracy_and_not_the_count():
    eval_panel = next(p for p in panels.PANELS if p.key == "eval")
    series = {
        "eval/accuracy": Series([0, 10], [0.2, 0.4]),
        "eval/n_scored": Series([0, 10], [50.0, 50.0]),
    }
    names = [d["meta"]["series"] for d in charts.panel_figure(eval_panel, series)["data"]]
    assert names == ["95% upper", "95% lower", "eval/accuracy"]


def test_the_summary_gives_the_last_accuracys_interval():
    accuracy = Series([0, 10], [0.2, 0.4])
    text = run_progress.accuracy_text(accuracy, Series([0, 10], [100.0, 100.0]))
    lo, hi = wilson_interval(0.4, 100)
    assert f"95% interval {lo:.0%}-{hi:.0%} of 100" in text
    assert "interval" not in run_progress.accuracy_text(accuracy)  # runs from before n was kept
