import re

import pytest
from trl.rewards import think_format_reward

from rewards.registry import REGISTRY


def fmt(**params):
    return REGISTRY["format"].build(params)


def reference_strict(text: str) -> float:
    """<think>…</think> then <answer>…</answer>, each tag exactly once, whitespace-only between."""
    inner = r"(?:(?!</?think>|</?answer>).)*"
    pattern = rf"<think>{inner}</think>\s*<answer>{inner}</answer>\s*"
    return 1.0 if re.fullmatch(pattern, text, re.DOTALL) else 0.0


CASES = [
    "<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>",
    "<think>\na\n</think>\n<answer>\n24\n</answer>\n",
    "<think>a</think> The answer is 24",
    "The answer is 24",
    " <think>a</think><answer>1</answer>",
    "<think>a</think>x<answer>1</answer>",
    "<think>a</think><answer>1</answer>trailing",
    "<think>a<think>b</think><answer>1</answer>",
    "<think>a</think><answer>1</answer><answer>2</answer>",
    "<answer>1</answer><think>a</think>",
    "<think>a</think></think><answer>1</answer>",
    "<think></think><answer></answer>",
    "",
    "<think>unfinished",
]


@pytest.mark.parametrize("text", CASES)
def test_strict_matches_reference(text):
    assert fmt()([text]) == [reference_strict(text)]


@pytest.mark.parametrize("text", [*CASES, "<think>a</think>b</think>", "<think>a</think>\n<think>"])
def test_think_only_matches_trl_think_format_reward(text):
    chat = [[{"role": "assistant", "content": text}]]
    assert fmt(answer_tag="")(chat) == think_format_reward(chat)


def test_soft_counts_quarter_per_tag():
    fn = fmt(mode="soft")
    assert fn(
        ["<think>a</think><answer>1</answer>", "<think>a</think> 24", "<think><think>", "x"]
    ) == [1.0, 0.5, 0.0, 0.0]


def test_pairs_mode():
    fn = fmt(mode="pairs")
    out = fn(
        [
            "<think>a</think><answer>1</answer>",
            "<think>a</think> 24",
            "</think>x<think><answer>1</answer>",
        ]
    )
    assert out == [1.0, 0.5, 0.5]


def test_prefilled_think():
    fn = fmt(think_prefilled=True)
    assert fn(["reasoning</think><answer>1</answer>", "<think>r</think><answer>1</answer>"]) == [
        1.0,
        1.0,
    ]


def test_custom_tags():
    fn = fmt(think_tag="reasoning", answer_tag="final")
    assert fn(
        ["<reasoning>r</reasoning><final>1</final>", "<think>r</think><answer>1</answer>"]
    ) == [1.0, 0.0]


def test_explanations():
    fn = fmt()
    got = [
        j.explanation
        for j in fn.judge(["<think>a</think> 24", "<think>a</think><answer>1</answer>"], None)
    ]
    assert got == ["missing <answer>", "<think>…</think><answer>…</answer> structure"]
