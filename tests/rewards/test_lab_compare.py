"""A/B of specs on the same generations: flips, rank correlations, best samples, probes."""

import numpy as np
import pytest

from rewards.analysis.probes import run_probes
from rewards.lab.batch import Generations
from rewards.lab.compare import average_ranks, best_changes, compare, spearman
from rewards.lab.verdict import MARGIN_TIE, correct_margin, correct_mask
from rewards.spec import PRESETS, RewardSpec, preset
from tests.rewards.lab_batch import generations

BATCH = generations(groups=4, per_group=8, seed=0)


def test_ranks_average_ties_and_spearman_matches_the_textbook_formula():
    np.testing.assert_array_equal(average_ranks(np.array([3.0, 1.0, 3.0, 2.0])), [3.5, 1, 3.5, 2])
    x, y = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([2.0, 1.0, 4.0, 3.0, 5.0])
    d2 = ((average_ranks(x) - average_ranks(y)) ** 2).sum()
    assert spearman(x, y) == pytest.approx(1 - 6 * d2 / (5 * (25 - 1)))  # no ties: 1 - 6Σd²/n(n²-1)
    assert spearman(x, np.ones(5)) is None
    assert spearman(np.array([1.0, np.nan]), np.array([1.0, 2.0])) is None


def test_best_changes_only_when_no_best_sample_is_shared():
    assert best_changes(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert not best_changes(np.array([1.0, 1.0]), np.array([0.0, 1.0]))  # a tie shares the best
    assert not best_changes(np.array([np.nan, np.nan]), np.array([0.0, 1.0]))


def test_a_spec_against_itself_agrees_everywhere():
    result = compare([("a", PRESETS["R1-style math"]), ("b", preset("R1-style math"))], BATCH)
    v = result.versus[0]
    assert np.nanmax(np.abs(v.diff)) == 0.0 and v.disagreement.max() == 0.0
    assert len(v.sign_flips) == 0 and not any(v.best_changes)
    assert all(r in (None, 1.0) for r in v.spearman)


def test_concise_answers_against_r1_flip_advantages_where_length_decides():
    specs = [("R1", PRESETS["R1-style math"]), ("concise", PRESETS["concise answers"])]
    result = compare(specs, BATCH)
    a, b = result.runs
    v = result.versus[0]
    # Naive: samples whose advantage is clearly positive under one and negative under the other.
    want = [
        i
        for i in range(len(BATCH))
        if abs(a.advantages[i]) > 1e-6
        and abs(b.advantages[i]) > 1e-6
        and (a.advantages[i] > 0) != (b.advantages[i] > 0)
    ]
    assert list(v.sign_flips) == want and want  # the batch has some
    np.testing.assert_allclose(v.diff, b.totals - a.totals)
    rows = result.rows()
    assert [r["sample"] for r in rows] == result.order()
    dis = [r["disagreement[concise]"] for r in rows]
    assert dis == sorted(dis, reverse=True)
    out = result.to_dict()
    assert out["versus"][0]["sign_flips"] == want
    assert out["specs"][1]["components"] == ["correctness", "format", "conciseness", "repetition"]


def test_probe_payoffs_under_each_spec_agree_with_run_probes():
    # A one-group batch scored without token ids: both sides of every probe are scored alike.
    texts = ["<think>2 + 2 = 4 so the sum is 4.</think><answer>4</answer>", "The sum is 5"]
    batch = Generations(["2+2?"] * 2, texts, [0, 0], ["4", "4"])
    result = compare(
        [("R1", PRESETS["R1-style math"]), ("concise", PRESETS["concise answers"])], batch
    )
    for run in result.runs:
        summary = run.summary()["probes"]
        for name, payoff in summary.items():
            deltas = [
                r.delta_total
                for t in texts
                for r in run_probes(run.spec, "2+2?", t, "4")
                if r.name == name and r.applicable and r.delta_total is not None
            ]
            if deltas:
                assert payoff["mean_delta"] == pytest.approx(np.mean(deltas), abs=1e-12)
                assert payoff["pays"] == (np.mean(deltas) > 1e-9)
            else:
                assert payoff["counted"] == 0


def test_compare_refuses_too_many_specs_and_duplicate_labels():
    spec = PRESETS["R1-style math"]
    with pytest.raises(ValueError, match="specs: 1 to 4 specs, got 5"):
        compare([(str(i), spec) for i in range(5)], BATCH)
    with pytest.raises(ValueError, match="own label"):
        compare([("a", spec), ("a", spec)], BATCH)


def test_aggregation_changes_the_advantages_not_the_totals():
    gdpo = preset("concise answers")
    gdpo.aggregation = "normalize_then_sum"
    gdpo.validate()
    result = compare(
        [("sum", PRESETS["concise answers"]), ("gdpo", gdpo)], BATCH, with_probes=False
    )
    v = result.versus[0]
    assert np.nanmax(np.abs(v.diff)) == 0.0  # TRL logs the same weighted sum as reward
    assert v.disagreement.max() > 0.01
    assert result.to_dict()["specs"][1]["aggregation"] == "normalize_then_sum"


def test_the_verdict_names_the_spec_that_pushes_right_answers_up_harder():
    """Correctness alone against correctness diluted by a heavy format term: the margin is
    the mean advantage of right minus wrong answers in groups with both, computed here by hand."""
    alone = RewardSpec.from_dict({"components": [{"name": "correctness", "weight": 1.0}]})
    diluted = RewardSpec.from_dict(
        {
            "components": [
                {"name": "correctness", "weight": 0.2},
                {"name": "format", "weight": 2.0},
            ]
        }
    )
    result = compare([("alone", alone), ("diluted", diluted)], BATCH)
    correct = correct_mask(result.runs)
    assert correct is not None
    for run in result.runs:
        right, wrong = [], []
        for g in range(run.matrix.num_groups):
            members = [
                i
                for i in range(len(BATCH))
                if run.matrix.groups[i] == g and not np.isnan(correct[i])
            ]
            if {correct[i] for i in members} >= {0.0, 1.0}:
                right += [run.advantages[i] for i in members if correct[i] == 1.0]
                wrong += [run.advantages[i] for i in members if correct[i] == 0.0]
        assert right and wrong
        assert correct_margin(run, correct) == pytest.approx(np.mean(right) - np.mean(wrong))
    a, b = (correct_margin(run, correct) for run in result.runs)
    assert a > b + MARGIN_TIE
    (line,) = result.to_dict()["verdicts"]
    assert line.startswith("diluted vs alone: alone pushes right answers up harder")
    assert f"advantage margin {b:+.2f} vs {a:+.2f}" in line
    assert f"in {sum(result.versus[0].best_changes)} of 4 groups" in line


def test_without_a_correctness_component_the_verdict_says_it_cannot_tell():
    plain = RewardSpec.from_dict({"components": [{"name": "format", "weight": 1.0}]})
    short = RewardSpec.from_dict({"components": [{"name": "conciseness", "weight": 1.0}]})
    result = compare([("a", plain), ("b", short)], BATCH)
    assert "no spec scores correctness" in result.to_dict()["verdicts"][0]
