"""Bounded work of the similarity component: ROUGE-L's longest common subsequence grows with
the product of both texts' word counts, so a pair too long for it is not scored (not hours of
CPU in the web process), and a web call's time budget stops the pairs left."""

from __future__ import annotations

from rewards.components.similarity import MAX_LCS_CELLS
from rewards.composer import score
from rewards.spec import RewardSpec
from rewards.verification.deadline import call_deadline


def similarity(metric: str) -> RewardSpec:
    component = {"name": "similarity", "params": {"metric": metric}}
    return RewardSpec.from_dict({"components": [component]})


def test_a_pair_too_long_for_rouge_l_is_not_scored_and_says_why():
    words = int(MAX_LCS_CELLS**0.5) + 50  # just over the table's limit
    long_text = " ".join(f"w{i % 97}" for i in range(words))
    got = score(
        similarity("rouge_l"),
        ["p", "p"],
        [long_text, "the cat sat"],
        answers=[long_text, "the cat sat"],
    )
    assert got[0].total is None and "use chrf" in got[0].trace[0].explanation
    assert got[1].total == 1.0  # ordinary texts are scored as before
    chrf = score(similarity("chrf"), ["p"], [long_text], answers=[long_text])
    assert chrf[0].total == 1.0  # chrF is linear: the long pair is scored


def test_pairs_left_when_the_call_s_time_budget_runs_out_are_not_scored():
    with call_deadline(0.0):
        got = score(similarity("rouge_l"), ["p"] * 3, ["a b", "c", "d"], answers=["a b"] * 3)
    for sample in got:
        assert sample.total is None
        assert "time budget ran out" in sample.trace[0].explanation
