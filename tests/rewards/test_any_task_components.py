"""Components for non-math tasks: answer_source, relative length, code format, CJK repetition."""

import pytest

from rewards.composer import score
from rewards.registry import REGISTRY
from rewards.spec import RewardSpec, RewardSpecError


def one(name, params=None):
    return RewardSpec.from_dict({"components": [{"name": name, "params": params or {}}]})


def raws(spec, completions, **kw):
    return [s.trace[0].raw for s in score(spec, None, completions, **kw)]


# --- correctness answer_source ---------------------------------------------------------------

MARKED = ["The answer is 6", "<answer>6</answer>", r"so \boxed{6}", "#### 6", "<answer>7</answer>"]


def test_answer_source_any_is_the_default_and_pays_untagged_answers():
    assert REGISTRY["correctness"].param("answer_source").default == "any"
    assert raws(one("correctness"), MARKED, answers=["6"] * 5) == [1.0, 1.0, 1.0, 1.0, 0.0]


def test_answer_source_tag_or_boxed_pays_only_marked_answers_like_open_r1():
    spec = one("correctness", {"answer_source": "tag_or_boxed", "wrong_value": -0.5})
    scored = score(spec, None, MARKED, answers=["6"] * 5)
    assert [s.total for s in scored] == [-0.5, 1.0, 1.0, -0.5, -0.5]
    assert "no answer inside <answer> or \\boxed{}" in scored[0].trace[0].explanation


def test_answer_source_keeps_unscorable_golds_unscored():
    spec = one("correctness", {"answer_source": "tag_or_boxed"})
    assert raws(spec, ["The answer is 6"], answers=[None]) == [None]


# --- relative length (Kimi 1.5 len_reward) ----------------------------------------------------


def test_relative_length_matches_open_r1_len_reward_by_hand():
    right = ["<answer>6</answer>" + "x" * n for n in (0, 10, 20)]  # 18, 28, 38 characters
    wrong = ["<answer>5</answer>" + "x" * n for n in (0, 10, 20)]
    spec = one("relative_length")
    assert raws(spec, right, answers=["6"] * 3) == [0.5, 0.0, -0.5]
    assert raws(spec, wrong, answers=["6"] * 3) == [0.0, 0.0, -0.5]
    assert raws(spec, [right[0], right[0]], answers=["6", "6"]) == [0.0, 0.0]


def test_relative_length_per_prompt_compares_within_each_group():
    texts = [
        "<answer>6</answer>",
        "<answer>6</answer>xxxx",
        "<answer>6</answer>",
        "<answer>6</answer>xx",
    ]
    spec = one("relative_length", {"relative_to": "prompt"})
    scored = score(spec, ["a", "a", "b", "b"], texts, answers=["6"] * 4)
    assert [s.total for s in scored] == [0.5, -0.5, 0.5, -0.5]
    batch = score(one("relative_length"), ["a", "a", "b", "b"], texts, answers=["6"] * 4)
    assert [s.total for s in batch] == [0.5, -0.5, 0.5, 0.0]


def test_relative_length_leaves_missing_golds_unscored():
    assert raws(one("relative_length"), ["a", "abc"], answers=[None, "1"])[0] is None


# --- code format ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value, why",
    [
        ("Here:\n```python\ndef f(x):\n    return x + 1\n```\n", 1.0, "parses"),
        ("```python\ndef f(x) return x\n```", 0.0, "does not parse"),
        ("```js\nlet x = 1;\n```", 0.0, "no fenced ```python block"),
        ("def f(x):\n    return x", 0.0, "no fenced ```python block"),
        ("```python\nx = 1\n", 0.0, "no fenced ```python block"),  # never closed
        ("```python\nimport os; os.remove('/x')\n```", 1.0, "parses"),  # parsed, never run
    ],
)
def test_code_format(text, value, why):
    scored = score(one("code_format"), None, [text])[0].trace[0]
    assert scored.raw == value and why in scored.explanation


def test_code_format_inside_the_answer_tag_and_json():
    spec = one("code_format", {"scope": "answer"})
    inside = "<think>plan</think><answer>\n```python\nprint(1)\n```\n</answer>"
    outside = "```python\nprint(1)\n```\n<answer>done</answer>"
    assert raws(spec, [inside, outside]) == [1.0, 0.0]
    spec = one("code_format", {"language": "json"})
    assert raws(spec, ['```json\n{"a": 1}\n```', "```json\n{a: 1}\n```"]) == [1.0, 0.0]


def test_code_format_language_is_checked():
    with pytest.raises(RewardSpecError, match=r"params\.language: must be 1-32 letters"):
        one("code_format", {"language": "py thon"})


# --- repetition with Chinese and Japanese word splitting ------------------------------------------


def test_repetition_splits_chinese_with_jieba_like_open_r1():
    text = "我喜欢吃苹果，我喜欢吃苹果"
    # jieba: 我 / 喜欢 / 吃 / 苹果 / ， / 我 / 喜欢 / 吃 / 苹果 -> 7 trigrams, 5 distinct
    value = raws(one("repetition", {"split": "jieba"}), [text])[0]
    assert value == pytest.approx(-(1 - 5 / 7))
    assert raws(one("repetition"), [text]) == [0.0]  # one whitespace "word": no trigram


def test_repetition_splits_japanese_into_characters():
    value = raws(one("repetition", {"split": "characters", "n": 2}), ["猫が好き 猫が好き"])[0]
    assert value == pytest.approx(-(1 - 4 / 7))  # 7 bigrams, 4 distinct
