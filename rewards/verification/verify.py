"""Judging a completion's answer against a gold answer: math, numeric, exact string, letter.

``math`` mode follows the field's reference (open-r1 ``accuracy_reward``, TRL
``trl.rewards.accuracy_reward``): parse the gold with ``math_verify.parse``; a gold that does not
parse makes the sample unscorable; otherwise parse the prediction and return
``math_verify.verify(gold, pred)``. Where we depart, and why:

- The prediction is the extracted answer (:mod:`rewards.verification.answers`) when one is marked;
  only unmarked completions are parsed whole (math-verify reads the first number of a tagged
  completion otherwise).
- An integer gold (``-?[1-9]\\d{0,14}`` or ``0``) is compared as an integer, without sympy, with a
  prediction that is an integer or whose first math-verify candidate is a plain integer
  (:func:`rewards.verification.mathcheck.first_integer_candidate` walks math-verify's own candidate
  order). math-verify parses such strings to sympy Integers of the same values and ``verify``
  compares integers exactly, so both give the same verdict; the tests check the two agree on random
  integers and random texts.
- math-verify runs with ``parsing_timeout=None`` and ``timeout_seconds=None`` (its timeouts use
  ``signal.alarm``, which raises outside the main thread) inside supervised worker processes
  with a hard deadline (:mod:`rewards.verification.mathpool`): short inputs such as
  ``$10^{10^{10}}$`` can otherwise run forever. Inputs are bounded too: a gold or extracted answer
  longer than :data:`MAX_ANSWER_CHARS` is not verified, and an unmarked completion is parsed only
  in its last :data:`MAX_UNMARKED_CHARS` characters.
- Verdicts are cached per (gold, prediction) string pair: a group shares one gold and answers
  repeat.
- With ``answer_source="tag_or_boxed"`` an answer outside the answer tag and ``\\boxed{}`` is
  wrong whatever it says, so it is never verified: only its gold is checked (parsed alone), so
  that an unusable gold still makes the sample unscorable, as it does for a paid answer.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Literal

from rewards.verification.answers import find_answer, gold_answer
from rewards.verification.mathcheck import CheckResult, first_integer_candidate, plain_integer
from rewards.verification.mathpool import get_checker

CorrectnessMode = Literal["math", "numeric", "exact", "choice"]
MODES: tuple[str, ...] = ("math", "numeric", "exact", "choice")
#: Which answers can be paid: ``any`` (tag, ``\\boxed{}``, ``####``, else the whole text) or
#: only ``tag_or_boxed``, by the :class:`~rewards.verification.answers.AnswerSpan` sources each
#: pays.
ANSWER_SOURCES: dict[str, tuple[str, ...] | None] = {
    "any": None,
    "tag_or_boxed": ("answer_tag", "boxed"),
}

#: Longest gold or extracted answer handed to math-verify, in characters.
MAX_ANSWER_CHARS = 1_000
#: An unmarked completion is parsed only in its last this-many characters.
MAX_UNMARKED_CHARS = 2_000
#: Longest text whose math-verify candidates are scanned in this process (math-verify's regexes
#: take time quadratic in the length on some inputs; longer texts are scanned in the workers).
MAX_INLINE_SCAN_CHARS = 400

_NUMBER_RE = re.compile(
    r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d{1,4})?(?![\w])"
    r"|(?<![\w.])[-+]?\.\d+(?![\w])"
)

_CACHE_SIZE = 65_536
_cache: OrderedDict[tuple[str, str], CheckResult] = OrderedDict()
_cache_lock = threading.Lock()


def check_math(pairs: list[tuple[str, str]]) -> list[CheckResult]:
    """math-verify's verdict on each ``(gold, pred)`` pair, through the cache and the workers.

    Decided here, exactly, without sympy: an integer gold (canonical, at most 15 digits) against a
    prediction that is one or whose first math-verify candidate is one
    (:func:`rewards.verification.mathcheck.first_integer_candidate`; scanned here up to
    :data:`MAX_INLINE_SCAN_CHARS` characters, in the workers beyond).
    """
    out: list[CheckResult | None] = [None] * len(pairs)
    todo: dict[tuple[str, str], list[int]] = {}
    with _cache_lock:
        for i, (gold, pred) in enumerate(pairs):
            gold, pred = gold.strip(), pred.strip()
            if plain_integer(gold) is not None:
                number = plain_integer(pred)
                if number is None and len(pred) <= MAX_INLINE_SCAN_CHARS:
                    number = first_integer_candidate(pred)
                if number is not None:
                    out[i] = CheckResult(True, number, int(gold) == int(number))
                    continue
            hit = _cache.get((gold, pred))
            if hit is not None:
                _cache.move_to_end((gold, pred))
                out[i] = hit
            else:
                todo.setdefault((gold, pred), []).append(i)
    if todo:
        keys = list(todo)
        results = get_checker().check_many(keys)
        with _cache_lock:
            for key, result in zip(keys, results, strict=True):
                for i in todo[key]:
                    out[i] = result
                if not result.timed_out:
                    _cache[key] = result
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return out  # type: ignore[return-value]


def math_equal(gold: str, pred: str) -> bool:
    """``math_verify.verify(parse(gold), parse(pred))`` (with the exact integer fast path)."""
    return check_math([(gold, pred)])[0].equal


def last_number(text: str) -> float | None:
    """The last decimal number written in ``text`` (thousands commas allowed), or ``None``."""
    for match in reversed(list(_NUMBER_RE.finditer(text[-MAX_UNMARKED_CHARS:]))):
        try:
            value = float(match.group(0).replace(",", ""))
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return None


def normalize_string(text: str) -> str:
    """Case-folded, whitespace-collapsed, without surrounding quotes, ``$`` or a final period."""
    text = " ".join(text.split()).casefold()
    text = text.strip("\"'`$ ")
    return text.rstrip(".").strip()


_LETTER_RE = re.compile(r"^\(?([A-Za-z])\)?(?:[\s.):,]|$)")
# One optional run of spaces between each part, so matching stays linear in the text.
_ANSWER_IS_RE = re.compile(r"answer(?:\s+is)?\s*(?::\s*)?\(?([A-Za-z])\)?(?![A-Za-z])", re.I)


def _choice_letter(text: str, letters: str) -> str | None:
    match = _LETTER_RE.match(text.strip())
    if match and match.group(1).upper() in letters:
        return match.group(1).upper()
    return None


@dataclass(frozen=True)
class Verdict:
    """The outcome of judging one completion.

    ``correct`` is ``None`` when the sample cannot be scored (no usable gold answer).
    ``answer`` is the prediction as shown to users (``None`` when none was found).
    ``paid`` is False for an answer the answer source does not pay (then ``correct`` is False).
    """

    correct: bool | None
    answer: str | None
    gold: str | None
    explanation: str
    paid: bool = True


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(correct: bool, answer: str | None, gold: str) -> Verdict:
    if answer is None:
        return Verdict(False, None, gold, f"no answer found; gold {_short(gold)}")
    sign = "=" if correct else "≠"
    return Verdict(correct, answer, gold, f"answer {_short(answer)} {sign} gold {_short(gold)}")


def judge(
    text: str,
    gold: Any,
    mode: CorrectnessMode = "math",
    **options: Any,
) -> Verdict:
    """Judge one completion ``text`` against ``gold``; see :func:`judge_batch`."""
    return judge_batch([text], [gold], mode, **options)[0]


def judge_batch(
    texts: list[str],
    golds: list[Any],
    mode: CorrectnessMode = "math",
    *,
    answer_tag: str = "answer",
    abs_tol: float = 1e-6,
    rel_tol: float = 0.0,
    letters: str = "ABCD",
    answer_source: str = "any",
) -> list[Verdict]:
    """Judge each completion against its gold answer (a dataset value) in the given mode.

    Modes: ``math`` (math-verify equivalence), ``numeric`` (last number, ``math.isclose`` with
    ``abs_tol``/``rel_tol``), ``exact`` (:func:`normalize_string` equality), ``choice`` (a
    multiple-choice letter from ``letters``). A verdict's ``correct`` is ``None`` when the gold
    is missing or unusable in that mode. An answer ``answer_source`` does not pay is wrong
    (``paid`` False) and, in math mode, never verified.
    """
    golds_text = [gold_answer(g) for g in golds]
    spans = [find_answer(t, answer_tag) for t in texts]
    marked = [span.text if span is not None else None for span in spans]
    pays = ANSWER_SOURCES[answer_source]
    paid = [pays is None or (span is not None and span.source in pays) for span in spans]
    if mode == "math":
        out = _judge_math(texts, marked, golds_text, paid)
    else:
        out = [
            Verdict(None, None, None, "no gold answer: not scored")
            if gold_text is None
            else _judge_other(mode, text, mark, gold_text, abs_tol, rel_tol, letters)
            for text, mark, gold_text in zip(texts, marked, golds_text, strict=True)
        ]
    return [
        v if is_paid or v.correct is None else replace(v, correct=False, paid=False)
        for v, is_paid in zip(out, paid, strict=True)
    ]


def _judge_other(
    mode: str,
    text: str,
    mark: str | None,
    gold_text: str,
    abs_tol: float,
    rel_tol: float,
    letters: str,
) -> Verdict:
    """One verdict in ``numeric``, ``exact`` or ``choice`` mode."""
    if mode == "numeric":
        return _judge_numeric(text, mark, gold_text, abs_tol, rel_tol)
    if mode == "exact":
        answer = mark if mark is not None else text.strip()
        if not answer:
            return _verdict(False, None, gold_text)
        return _verdict(normalize_string(answer) == normalize_string(gold_text), answer, gold_text)
    return _judge_choice(text, mark, gold_text, letters)


def _judge_numeric(
    text: str, marked: str | None, gold_text: str, abs_tol: float, rel_tol: float
) -> Verdict:
    gold_value = last_number(gold_text)
    if gold_value is None:
        return Verdict(None, None, gold_text, f"gold {_short(gold_text)} has no number: not scored")
    value = last_number(marked if marked is not None else text)
    if value is None:
        return _verdict(False, None, gold_text)
    ok = math.isclose(value, gold_value, rel_tol=rel_tol, abs_tol=abs_tol)
    return _verdict(ok, f"{value:g}", gold_text)


def _judge_choice(text: str, marked: str | None, gold_text: str, letters: str) -> Verdict:
    gold_letter = _choice_letter(gold_text, letters)
    if gold_letter is None:
        return Verdict(
            None, None, gold_text, f"gold {_short(gold_text)} is not one of {letters}: not scored"
        )
    if marked is not None:
        letter = _choice_letter(marked, letters)
    else:
        found = [m.group(1).upper() for m in _ANSWER_IS_RE.finditer(text[-MAX_UNMARKED_CHARS:])]
        found = [f for f in found if f in letters]
        letter = found[-1] if found else _choice_letter(text, letters)
    return _verdict(letter == gold_letter, letter, gold_letter)


def _judge_math(
    texts: list[str], marked: list[str | None], golds: list[str | None], paid: list[bool]
) -> list[Verdict]:
    out: list[Verdict | None] = [None] * len(texts)
    pairs: list[tuple[str, str]] = []
    where: list[int] = []
    for i, (text, mark, gold) in enumerate(zip(texts, marked, golds, strict=True)):
        if gold is None:
            out[i] = Verdict(None, None, None, "no gold answer: not scored")
        elif len(gold) > MAX_ANSWER_CHARS:
            out[i] = Verdict(None, None, gold, "gold answer too long to verify: not scored")
        elif mark is not None and len(mark) > MAX_ANSWER_CHARS:
            out[i] = Verdict(False, _short(mark), gold, "answer too long to verify")
        elif not paid[i]:  # wrong whatever it says: only the gold is checked, parsed alone
            out[i] = Verdict(False, None, gold, "not paid: not verified")
            if plain_integer(gold.strip()) is None:
                pairs.append((gold, ""))
                where.append(i)
        else:
            pairs.append((gold, mark if mark is not None else text[-MAX_UNMARKED_CHARS:]))
            where.append(i)
    for i, result, (gold, _) in zip(where, check_math(pairs), pairs, strict=True):
        mark = marked[i]
        if not result.gold_ok:
            out[i] = Verdict(
                None, None, gold, f"gold {_short(gold)} does not parse as math: not scored"
            )
        elif not paid[i]:
            continue  # the gold parses: the unpaid verdict stands
        elif result.timed_out:
            shown = _short(mark) if mark is not None else None
            out[i] = Verdict(False, shown, gold, "answer could not be verified in time")
        elif result.shown is None:
            if mark is None:
                out[i] = _verdict(False, None, gold)
            else:
                out[i] = Verdict(False, mark, gold, f"answer {_short(mark)} does not parse as math")
        else:
            out[i] = _verdict(result.equal, mark if mark is not None else result.shown, gold)
    return out  # type: ignore[return-value]
