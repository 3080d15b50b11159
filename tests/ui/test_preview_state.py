import math
from types import SimpleNamespace

import pytest

from rewards.spec import ComponentSpec, RewardSpec
from ui.preview.cache import FIXED_COLUMNS, PreviewCache

RIGHT = "<think>2+3: 5</think><answer>5</answer>"
WRONG = "<think>2+3: 6</think><answer>6</answer>"
LOOSE = "the answer is 5"


def spec(correct_w=1.0, format_w=0.5):
    return RewardSpec([ComponentSpec("correctness", correct_w), ComponentSpec("format", format_w)])


@pytest.fixture
def cache():
    completions = [RIGHT, WRONG, LOOSE, RIGHT, RIGHT]
    return PreviewCache(
        prompts=["What is 2+3?"] * 3 + ["What is 1+4?"] * 2,
        completions=completions,
        answers=["5"] * 5,
        completion_ids=[[1, 2, 3]] * 5,
        truncated=[False, False, False, False, True],
        groups=[0, 0, 0, 1, 1],
    )


def test_rescoring_with_new_weights_changes_totals_without_new_completions(cache):
    before = cache.rescore(spec(1.0, 0.5)).totals
    after = cache.rescore(spec(1.0, 2.0)).totals
    assert before[0] == pytest.approx(1.5) and after[0] == pytest.approx(3.0)
    assert before[2] == pytest.approx(1.0) == after[2]  # loose format: correctness only
    assert cache.completions[0] == RIGHT  # the cache itself is untouched


def test_rows_have_one_column_per_component_and_highlight_the_answer(cache):
    scores = cache.rescore(spec())
    assert scores.headers() == [*FIXED_COLUMNS, "correctness", "format", "total"]
    row = scores.rows()[0]
    assert row[5] == "5"  # extracted answer
    assert "<mark" in row[3] and "&lt;answer&gt;" in row[3]
    assert row[6:] == [1.0, 1.0, 1.5]
    assert "cut at max tokens" in scores.rows()[4][3]


def test_contributions_sum_to_the_totals(cache):
    scores = cache.rescore(spec(1.0, 0.5))
    parts = scores.contributions()
    for i, total in enumerate(scores.totals):
        assert math.isclose(sum(v or 0.0 for v in (p[i] for p in parts.values())), total)


def test_group_diagnostics_see_the_zero_spread_group(cache):
    diag = cache.rescore(spec()).diagnostics()
    assert diag.zero_std_fraction == pytest.approx(0.5)  # group 1 is all right


def test_cache_from_generated_samples_keeps_prompt_major_order():
    samples = [
        SimpleNamespace(
            prompt_index=p, sample_index=s, text=f"{p}{s}", token_ids=[p, s], truncated=s == 1
        )
        for p in range(2)
        for s in range(2)
    ]
    cache = PreviewCache.from_samples(["a", "b"], ["1", None], samples, source="m")
    assert cache.prompts == ["a", "a", "b", "b"]
    assert cache.answers == ["1", "1", None, None]
    assert cache.groups == [0, 0, 1, 1]
    assert cache.truncated == [False, True, False, True]


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="answers"):
        PreviewCache(
            prompts=["p"],
            completions=["c"],
            answers=[],
            completion_ids=[[1]],
            truncated=[False],
            groups=[0],
        )


def test_empty_cache_scores_to_nothing():
    scores = PreviewCache().rescore(spec())
    assert scores.rows() == [] and scores.mean_total() is None


def test_a_correct_answer_without_a_tag_says_the_whole_text_was_checked(cache):
    from ui.shared.trace_view import WHOLE_TEXT

    row = cache.rescore(spec()).rows()[2]  # "the answer is 5": correct on the whole text
    assert row[5] == WHOLE_TEXT and row[6] == 1.0


def test_a_completion_longer_than_the_reward_reads_says_where_it_was_cut():
    from rewards.completions.text import MAX_COMPLETION_CHARS
    from ui.design.tab import trace_rows

    long = "x" * MAX_COMPLETION_CHARS + "<answer>5</answer>"
    cache = PreviewCache(
        prompts=["q"],
        completions=[long],
        answers=["5"],
        completion_ids=[[1]],
        truncated=[False],
        groups=[0],
    )
    assert f"first {MAX_COMPLETION_CHARS:,} of" in cache.rescore(spec()).rows()[0][3]
    _, total = trace_rows(spec(), "q", long, "5")
    assert "is not seen by the reward" in total
    assert "not seen" not in trace_rows(spec(), "q", RIGHT, "5")[1]


def test_the_default_models_preview_flags_a_format_it_never_writes(ctx):
    """Real completions of the shipped model: it writes <think>, never <scratchpad>."""
    from engine.models.specs import DEFAULT_MODEL_ALIAS
    from ui.preview.generate import PreviewRequest, generate_preview

    request = PreviewRequest(
        model_key=DEFAULT_MODEL_ALIAS,
        custom_model="",
        data={"source": "builtin"},
        num_prompts=4,
        samples_per_prompt=4,
        max_new_tokens=24,
    )
    cache = generate_preview(ctx, request)
    spec = RewardSpec(
        [
            ComponentSpec("correctness", 1.0),
            ComponentSpec("format", 0.5, {"mode": "strict", "think_tag": "scratchpad"}),
        ]
    )
    warnings = cache.rescore(spec).diagnostics().warnings
    flagged = [w for w in warnings if w.startswith("format paid 0 on all 16 samples")]
    assert flagged == [
        "format paid 0 on all 16 samples: the model never writes `<scratchpad>`; try soft "
        "format, a system prompt that shows the format, or a prefilled `<scratchpad>`"
    ]
    # the tags it does write vary in the soft score: nothing to flag there
    soft = RewardSpec(
        [ComponentSpec("correctness", 1.0), ComponentSpec("format", 0.5, {"mode": "soft"})]
    )
    assert not any(w.startswith("format paid") for w in cache.rescore(soft).diagnostics().warnings)
