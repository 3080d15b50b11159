"""Stored sample rows: the texts as the rewards read them, scored once."""

from __future__ import annotations

from engine.tracking.generation_batch import GenerationBatch
from engine.tracking.samples import sample_rows
from rewards.composer import ComponentTrace, ScoredSample, score
from rewards.spec import ComponentSpec, RewardSpec

SPEC = RewardSpec([ComponentSpec("format", 1.0, {"mode": "strict"})])
GOOD = "<think>2+2=4</think><answer>4</answer>"
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]


def batch(completions, scored=None) -> GenerationBatch:
    n = len(completions)
    return GenerationBatch(
        prompts=[CHAT] * n,
        completions=completions,
        answers=["4"] * n,
        completion_ids=[[1, 2, 3]] * n,
        advantages=[0.5] * n,
        scored=scored,
    )


def test_typed_part_completions_are_stored_and_scored_as_their_text():
    parts = [{"role": "assistant", "content": [{"type": "text", "text": GOOD}]}]
    rows = sample_rows(SPEC, batch([parts, GOOD]), group_size=2, limit=2)
    assert [r["completion"] for r in rows] == [GOOD, GOOD]
    assert [r["total"] for r in rows] == [1.0, 1.0]
    assert rows[0]["prompt"] == "system: Be brief.\nuser: 2+2?"


def test_a_batch_the_trainer_scored_is_not_scored_again():
    # Scores no reward would give: only the batch's own can produce them.
    given = [
        ScoredSample(7.0, [ComponentTrace("format", 7.0, 1.0, 7.0, "given", "format")]),
        ScoredSample(None, [ComponentTrace("format", None, 1.0, None, "given", "format")]),
    ]
    rows = sample_rows(SPEC, batch([GOOD, "no tags"], scored=given), group_size=2, limit=2)
    assert [r["total"] for r in rows] == [7.0, None]
    assert rows[0]["trace"][0]["explanation"] == "given"


def test_without_scores_the_rows_match_the_composer():
    rows = sample_rows(SPEC, batch([GOOD, "no tags"]), group_size=2, limit=2)
    expected = score(SPEC, None, [GOOD, "no tags"], answers=["4", "4"])
    assert [r["total"] for r in rows] == [s.total for s in expected]
    assert [r["trace"] for r in rows] == [[t.to_dict() for t in s.trace] for s in expected]


def test_each_row_keeps_its_length_in_tokens():
    rows = sample_rows(SPEC, batch([GOOD, "no tags"]), group_size=2, limit=2)
    assert [r["tokens"] for r in rows] == [3, 3]
