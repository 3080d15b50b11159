import json
import math

from rewards.composer import score
from rewards.spec import PRESETS, ComponentSpec, RewardSpec

TASK = "<think>86-62: 6-2=4; 8-6=2; so {}</think><answer>{}</answer>"


def test_r1_preset_on_the_builtin_task():
    completions = [TASK.format(24, 24), TASK.format(25, 25), "so 24", "<think>x</think> answer 24"]
    scored = score(PRESETS["R1-style math"], None, completions, answers=["24"] * 4)
    assert [s.total for s in scored] == [1.5, 0.5, 1.0, 1.0]
    assert [t.name for t in scored[0].trace] == ["correctness", "format"]
    first = scored[1].trace[0]
    assert (first.raw, first.weight, first.contribution) == (0.0, 1.0, 0.0)
    assert first.explanation == "answer 25 ≠ gold 24"


def test_total_is_the_sum_of_contributions():
    completions = [TASK.format(24, 24), "First, 6-2=4. Next, 8-6=2. Finally, 24. " * 3]
    ids = [[1] * 30, [1] * 200]
    spec = PRESETS["hand-tuned GRPO script"]
    for s in score(spec, None, completions, answers=["24", "24"], completion_ids=ids):
        parts = [t.contribution for t in s.trace if t.contribution is not None]
        assert math.isclose(s.total, sum(parts), rel_tol=0, abs_tol=1e-12)
        for t in s.trace:
            assert t.contribution == (None if t.raw is None else t.weight * t.raw)


def test_none_components_are_skipped_and_all_none_gives_none():
    spec = RewardSpec(
        [
            ComponentSpec("correctness", 1.0),
            ComponentSpec("conciseness", 0.5),  # tokens, but no completion_ids: None
            ComponentSpec("language", 2.0),
        ]
    )
    scored = score(
        spec,
        None,
        ["<answer>24</answer>", "this is plainly an English sentence"],
        answers=[None, "24"],
    )
    assert scored[0].total is None
    assert [t.raw for t in scored[0].trace] == [None, None, None]
    assert scored[1].total == 0.0 + 2.0 * 1.0
    assert scored[1].trace[1].explanation == "length in tokens needs completion_ids"


def test_to_dict_is_json_serialisable():
    scored = score(PRESETS["hand-tuned GRPO script"], ["p"], [TASK.format(3, 3)], answers=["3"])
    data = json.loads(json.dumps([s.to_dict() for s in scored]))
    assert data[0]["total"] == scored[0].total
    assert set(data[0]["trace"][0]) == {
        "name",
        "component",
        "raw",
        "weight",
        "contribution",
        "explanation",
    }


def test_answers_feed_a_custom_gold_column():
    spec = RewardSpec([ComponentSpec("correctness", params={"gold_column": "solution"})])
    assert score(spec, None, ["<answer>7</answer>"], answers=["7"])[0].total == 1.0
    other = score(spec, None, ["<answer>7</answer>"], answers=["7"], columns={"solution": ["8"]})
    assert other[0].total == 0.0


def test_chat_completions():
    chat = [[{"role": "assistant", "content": TASK.format(24, 24)}]]
    assert score(PRESETS["R1-style math"], None, chat, answers=["24"])[0].total == 1.5


def test_disabled_components_are_not_scored():
    spec = RewardSpec([ComponentSpec("format"), ComponentSpec("correctness", enabled=False)])
    assert [t.name for t in score(spec, None, ["x"])[0].trace] == ["format"]
