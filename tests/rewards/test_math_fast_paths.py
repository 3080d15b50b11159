"""The sympy-free fast paths decide exactly as math-verify does."""

import logging

from hypothesis import given, settings
from hypothesis import strategies as st
from math_verify import parse, verify

from rewards.verification.mathcheck import first_integer_candidate
from rewards.verification.verify import check_math

logging.getLogger("math_verify").setLevel(logging.ERROR)

INTS = st.integers(-(10**15) + 1, 10**15 - 1)


def mv_equal(gold: str, pred: str) -> bool:
    return verify(
        parse(gold, parsing_timeout=None), parse(pred, parsing_timeout=None), timeout_seconds=None
    )


@settings(max_examples=300, deadline=None)
@given(a=INTS, delta=st.sampled_from([0, 0, 1, -1, 10**6, 10**12]), zeros=st.integers(0, 2))
def test_integer_pairs_agree_with_math_verify(a, delta, zeros):
    b = a + delta
    if abs(b) >= 10**15:
        return
    gold = str(a)
    pred = ("-" if b < 0 else "") + "0" * zeros + str(abs(b))
    assert check_math([(gold, pred)])[0].equal == mv_equal(gold, pred)


PIECES = st.sampled_from(
    [
        "The answer is",
        "answer:",
        "final answer is",
        "I hope",
        "so",
        "Therefore",
        "apples",
        "=",
        "+",
        "-",
        "%",
        "percent",
        ",",
        ".",
        "\n",
        "$",
        "$$",
        r"\frac{1}{2}",
        r"\boxed{",
        "}",
        r"\(",
        r"\)",
        "x",
        "3.5",
        "1,000",
        "1 000",
        "-7",
        "007",
        "0",
        "12%",
        "2/3",
        "٣",
        "10^3",
        "e",
    ]
)
TEXT = st.lists(st.one_of(PIECES, INTS.map(str)), max_size=12).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(text=TEXT)
def test_first_integer_candidate_agrees_with_math_verify_parse(text):
    number = first_integer_candidate(text)
    if number is None:
        return
    parsed = parse(text, parsing_timeout=None)
    assert parsed, text
    assert parsed[0] == int(number), text


@settings(max_examples=200, deadline=None)
@given(text=TEXT, gold=INTS.map(str))
def test_check_math_agrees_with_math_verify_on_text(text, gold):
    assert check_math([(gold, text)])[0].equal == mv_equal(gold, text)


def test_candidate_examples():
    assert first_integer_candidate("6-2=4; 8-6=2; so 24. The answer is 24.") == "24"
    assert first_integer_candidate("it is 1,000 apples") == "1000"
    assert first_integer_candidate("so 007") == "7"
    assert first_integer_candidate("about 12%") is None
    assert first_integer_candidate("3.5") is None
    assert first_integer_candidate(r"the answer is $\frac{1}{2}$") is None
    assert first_integer_candidate("no numbers") is None
