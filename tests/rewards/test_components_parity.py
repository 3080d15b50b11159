"""Each component against its reference formula (TRL's implementation where one exists)."""

import math
import re

import py3langid
import pytest
from trl.rewards import (
    get_cosine_scaled_reward,
    get_repetition_penalty_reward,
    get_soft_overlong_punishment,
)

from rewards.completions.langid_batch import classify_many, labels
from rewards.components.language import LANGUAGES, sentences
from rewards.registry import REGISTRY

PROSE = [
    "",
    "word",
    "one two",
    "the cat sat on the mat the cat sat on the mat",
    "The The the THE the the",
    "a b c d e f g h",
    "Step 1: add. Step 2: carry. Finally, done.",
    "1. first\n2. second\n- item\n* star\nFirst, Second, Next, Finally,",
    "First,First,First,Next,",
    "  lots   of   spaces  lots of spaces  ",
]


def build(name, **params):
    return REGISTRY[name].build(params)


def open_r1_repetition(text: str, n: int, max_penalty: float) -> float:
    # open-r1 src/open_r1/rewards.py get_repetition_penalty_reward, written out naively
    if text == "":
        return 0.0
    words = text.lower().split()
    if len(words) < n:
        return 0.0
    ngrams = set()
    total = 0
    for i in range(len(words) - n + 1):
        ngrams.add(tuple(words[i : i + n]))
        total += 1
    scaling = 1 - len(ngrams) / total
    return scaling * max_penalty


@pytest.mark.parametrize("n, max_penalty", [(1, -1.0), (2, -0.5), (3, -1.0), (4, -2.0)])
def test_word_repetition_matches_open_r1(n, max_penalty):
    got = build("repetition", n=n, max_penalty=max_penalty)(PROSE)
    for value, text in zip(got, PROSE, strict=True):
        assert abs(value - open_r1_repetition(text, n, max_penalty)) <= 1e-9


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_token_repetition_matches_trl(n):
    ids = [[], [1], [1, 2], [5, 5, 5, 5, 5], [1, 2, 3, 1, 2, 3, 1, 2], list(range(40)) * 2]
    oracle = get_repetition_penalty_reward(ngram_size=n, max_penalty=-1.0)
    got = build("repetition", n=n, unit="tokens")(["x"] * len(ids), completion_ids=ids)
    assert got == oracle(completion_ids=ids)


def test_token_repetition_without_ids_is_none():
    assert build("repetition", unit="tokens")(["a a a a"]) == [None]


def test_repetition_explanation():
    fn = build("repetition")
    [j] = fn.judge(["the cat sat on the cat sat on"], None)
    assert j.explanation == "33% repeated trigrams"


def open_r1_steps(text: str) -> float:
    pattern = r"(Step \d+:|^\d+\.|\n-|\n\*|First,|Second,|Next,|Finally,)"
    return min(1.0, len(re.findall(pattern, text)) / 3)


def test_reasoning_steps_match_open_r1():
    assert build("reasoning_steps")(PROSE) == [open_r1_steps(t) for t in PROSE]


def test_reasoning_steps_custom_markers_and_target():
    fn = build("reasoning_steps", markers=[";"], target=2, case_sensitive=False)
    assert fn(["a; b", "a; b; c; d", "none"]) == [0.5, 1.0, 0.0]
    [j] = fn.judge(["a; b"], None)
    assert j.explanation == "1 of 2 step markers"


BOXED = [r"\boxed{\frac{1}{3}}", r"\boxed{\frac{1}{2}}", r"The answer is \boxed{7}", r"\boxed{8}"]
GOLDS = [r"\frac{1}{3}", r"\frac{1}{3}", "7", "7"]


@pytest.mark.parametrize("length", [0, 1, 50, 99, 100, 250])
def test_cosine_matches_trl(length):
    oracle = get_cosine_scaled_reward(max_len=100)
    chat = [[{"role": "assistant", "content": c}] for c in BOXED]
    ids = [[1] * length] * len(BOXED)
    want = oracle(chat, solution=GOLDS, completion_ids=ids)
    got = build("conciseness", max_len=100)(chat, answer=GOLDS, completion_ids=ids)
    assert got == want


def test_cosine_with_custom_bounds_matches_trl():
    params = dict(
        min_value_wrong=-2.0, max_value_wrong=-0.1, min_value_correct=0.2, max_value_correct=3.0
    )
    oracle = get_cosine_scaled_reward(max_len=64, **params)
    chat = [[{"role": "assistant", "content": c}] for c in BOXED]
    ids = [[1] * 17, [1] * 30, [1] * 64, [1]]
    want = oracle(chat, solution=GOLDS, completion_ids=ids)
    assert (
        build("conciseness", max_len=64, **params)(chat, answer=GOLDS, completion_ids=ids) == want
    )


def test_cosine_in_characters():
    fn = build("conciseness", unit="characters", max_len=40)
    text = "<answer>7</answer>"
    want = 0.5 + 0.5 * (1.0 - 0.5) * (1 + math.cos(math.pi * len(text) / 40))
    assert abs(fn([text], answer=["7"])[0] - want) <= 1e-12


@pytest.mark.parametrize("max_len, cache", [(100, 20), (10, 10), (50, 1)])
def test_overlong_matches_trl(max_len, cache):
    oracle = get_soft_overlong_punishment(max_completion_len=max_len, soft_punish_cache=cache)
    ids = [
        [1] * n
        for n in (
            0,
            5,
            max_len - cache,
            max_len - cache + 1,
            max_len - 1,
            max_len,
            max_len + 1,
            3 * max_len,
        )
    ]
    got = build("conciseness", mode="overlong", max_len=max_len, cache=cache)(
        ["x"] * len(ids), completion_ids=ids
    )
    assert got == oracle(completion_ids=ids)


def test_language_codes_match_the_model():
    assert set(LANGUAGES) == set(labels())


LANG_TEXTS = [
    "First, I subtract the ones digits: 6 minus 2 is 4. Next, the tens. The answer is 24.",
    "Erst subtrahiere ich die Einer. Dann die Zehner. Also ist die Antwort vierundzwanzig.",
    "First we add the numbers together. 然后我们把结果相加起来。 The answer is twenty four.",
    "<think>so 24</think><answer>24</answer>",
    "Je pense que la réponse est vingt-quatre.\nI think the answer is twenty-four.",
]


def reference_language_share(text, target, min_letters=12):
    # per sentence: py3langid.classify, weighted by letters
    pieces = sentences(text, min_letters)
    if not pieces:
        return None
    total = sum(n for _, n in pieces)
    return sum(n for s, n in pieces if py3langid.classify(s)[0] == target) / total


@pytest.mark.parametrize("target", ["en", "de", "zh"])
def test_language_share_matches_per_sentence_py3langid(target):
    got = build("language", language=target)(LANG_TEXTS)
    for value, text in zip(got, LANG_TEXTS, strict=True):
        want = reference_language_share(text, target)
        assert (value is None and want is None) or abs(value - want) <= 1e-9


def test_language_all_or_nothing_and_explanations():
    fn = build("language", mode="all")
    assert fn(LANG_TEXTS[:3]) == [1.0, 0.0, 0.0]
    j = build("language").judge(LANG_TEXTS, None)
    assert j[0].explanation == "100% English"
    assert j[1].explanation == "0% English (100% German)"
    assert j[3].explanation == "too little text to identify a language"


def test_batched_identifier_equals_py3langid():
    texts = [s for t in LANG_TEXTS * 3 for s, _ in sentences(t, 1)] + [
        "",
        "42",
        "ß" * 700,
        "ABC DEF",
    ]
    assert classify_many(texts) == [py3langid.classify(t) for t in texts]
