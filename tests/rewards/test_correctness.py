import pytest
from math_verify import parse, verify
from trl.rewards import accuracy_reward

from rewards.registry import REGISTRY
from rewards.verification.verify import check_math, judge

TASK = "<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>{}</answer>"


def correctness(**params):
    return REGISTRY["correctness"].build(params)


def test_builtin_task_answers():
    fn = correctness()
    completions = [TASK.format(24), TASK.format(25), "<think>6-2=4</think> The answer is 24", "24"]
    assert fn(completions, answer=["24"] * 4) == [1.0, 0.0, 1.0, 1.0]


def test_chat_form_and_unknown_kwargs():
    fn = correctness()
    chat = [[{"role": "assistant", "content": TASK.format(24)}]]
    out = fn(
        chat,
        answer=["24"],
        prompts=["86-62"],
        completion_ids=[[1, 2]],
        trainer_state=None,
        log_extra=None,
        log_metric=None,
        difficulty=[2],
    )
    assert out == [1.0]


def test_metric_name_is_the_component_name():
    assert correctness().__name__ == "correctness"


def test_think_numbers_do_not_count_as_the_answer():
    # math-verify alone reads the first number (12) here; the answer tag says 42.
    assert correctness()(["<think>7+5=12</think><answer>42</answer>"], answer=["12"]) == [0.0]


def test_unusable_gold_is_none():
    fn = correctness()
    out = fn([TASK.format(24)] * 3, answer=[None, "not math at all", ""])
    assert out == [None, None, None]


def test_wrong_value():
    assert correctness(wrong_value=-0.5)([TASK.format(3)], answer=["4"]) == [-0.5]


def test_gsm8k_gold_and_latex_answer():
    fn = correctness()
    assert fn([r"\boxed{\frac{1}{2}}", r"\boxed{0.5}"], answer=["#### 0.5", "1/2"]) == [1.0, 1.0]


def test_numeric_mode_tolerance():
    fn = correctness(mode="numeric", abs_tol=0.01)
    out = fn(
        ["<answer>3.141</answer>", "<answer>3.2</answer>", "it is 1,000"],
        answer=["3.14159", "3.14159", "1000"],
    )
    assert out == [1.0, 0.0, 1.0]


def test_exact_mode_normalises_case_and_space():
    fn = correctness(mode="exact")
    assert fn(
        ["<answer> New  York. </answer>", "<answer>Boston</answer>"], answer=["new york"] * 2
    ) == [1.0, 0.0]


def test_choice_mode():
    fn = correctness(mode="choice", letters="ABCDE")
    completions = [
        "<answer>(B)</answer>",
        "The answer is C.",
        "<answer>E) five</answer>",
        "<answer>B</answer>",
    ]
    assert fn(completions, answer=["B", "C", "E", "Z"]) == [1.0, 1.0, 1.0, None]


def test_gold_column_parameter():
    fn = correctness(gold_column="solution")
    assert fn([TASK.format(24)], solution=["24"]) == [1.0]
    assert fn([TASK.format(24)], answer=["24"]) == [None]


def test_explanations():
    assert judge(TASK.format(42), "43").explanation == "answer 42 ≠ gold 43"
    assert judge(TASK.format(43), "43").explanation == "answer 43 = gold 43"
    assert judge("I do not know", "43").explanation == "no answer found; gold 43"


@pytest.mark.parametrize(
    "gold, pred",
    [
        ("24", "24"),
        ("24", "25"),
        ("-5", "-5"),
        ("-0", "0"),
        ("007", "7"),
        ("0", "-0"),
        ("10", "010"),
        ("123456789012345", "123456789012345"),
        ("999999999999999", "999999999999998"),
    ],
)
def test_integer_fast_path_agrees_with_math_verify(gold, pred):
    fast = check_math([(gold, pred)])[0].equal
    assert fast == verify(
        parse(gold, parsing_timeout=None), parse(pred, parsing_timeout=None), timeout_seconds=None
    )


BOXED = [
    (r"The answer is \boxed{\frac{1}{3}}", r"\frac{1}{3}"),
    (r"The answer is \boxed{\frac{1}{2}}", r"\frac{1}{3}"),
    (r"so \boxed{42}", "42"),
    (r"so \boxed{41}", "42"),
    (r"thus $\boxed{2\sqrt{2}}$", r"\sqrt{8}"),
    (r"\boxed{x^2+1}", "1+x^2"),
    (r"\boxed{0.25}", r"\frac{1}{4}"),
]


def test_parity_with_trl_accuracy_reward_on_boxed_answers():
    completions = [[{"role": "assistant", "content": c}] for c, _ in BOXED]
    golds = [g for _, g in BOXED]
    assert correctness()(completions, answer=golds) == accuracy_reward(completions, golds)


def test_parity_with_reference_formula_on_tagged_answers():
    # Reference: None when the gold does not parse, else float(verify(parse(gold), parse(answer))).
    cases = [
        ("24", "24"),
        ("24", "25"),
        (r"\frac{1}{2}", "0.5"),
        ("3", "3.0"),
        ("x+1", "1+x"),
        ("$x+1$", "$1+x$"),
        ("5", "five"),
    ]
    fn = correctness()
    out = fn(
        [f"<think>...</think><answer>{a}</answer>" for _, a in cases], answer=[g for g, _ in cases]
    )
    expected = []
    for gold, answer in cases:
        g = parse(gold, parsing_timeout=None)
        if not g:
            expected.append(None)
            continue
        expected.append(float(verify(g, parse(answer, parsing_timeout=None), timeout_seconds=None)))
    assert out == expected


@pytest.mark.parametrize("mode", ["math", "numeric", "exact"])
def test_tag_or_boxed_scores_as_before_and_never_verifies_an_unpaid_answer(mode):
    """``tag_or_boxed`` used to verify every answer and then pay only the marked ones: the same
    scores (checked against that rule through ``any``), with math-verify never given an unpaid
    answer (its pair cache, which every verified pair passes, holds none of them)."""
    from rewards.verification import verify

    golds = ["\\frac{1}{2}", "\\frac{1}{2}", "0.5", "0.5", "7", "7", None, "\\frac{"]
    texts = [
        "<answer>\\frac{1}{2}</answer>",
        "so the answer is 1/2 (a half, unmarked)",
        "\\boxed{0.5}",
        "#### 0.5 by hashes",
        "7 unmarked",
        "<answer>8</answer>",
        "no gold here",
        "a gold that does not parse, unmarked: 1/2",
    ]
    marked = [True, False, True, False, False, True, False, False]
    verify._cache.clear()
    strict = correctness(mode=mode, answer_source="tag_or_boxed", wrong_value=-0.5)
    got = strict(texts, answer=golds)
    anything = correctness(mode=mode, answer_source="any", wrong_value=-0.5)
    before = [
        s if s is None or paid else -0.5
        for s, paid in zip(anything(texts, answer=golds), marked, strict=True)
    ]
    assert got == before
    assert got[:3] == [1.0, -0.5, 1.0] and got[6] is None
    verify._cache.clear()
    strict(texts, answer=golds)
    verified = {pred for _, pred in verify._cache}
    assert not verified & {t for t, paid in zip(texts, marked, strict=True) if not paid}
    if mode == "math":
        assert "\\frac{1}{2}" in verified and got[7] is None  # a gold that does not parse
