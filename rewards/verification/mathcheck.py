"""One math-verify check: does the prediction equal the gold? (used in workers and exports).

This module imports only math-verify, so exported reward modules can include it verbatim.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from itertools import groupby


@dataclass(frozen=True)
class CheckResult:
    """math-verify's answer for one (gold, prediction) pair.

    ``gold_ok``: the gold parses. ``shown``: the prediction as math-verify extracted it (``None``
    when nothing parsed). ``equal``: ``verify(gold, pred)``. ``timed_out``: the deadline hit.
    """

    gold_ok: bool
    shown: str | None
    equal: bool
    timed_out: bool = False


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str, timeout: int | None) -> list:
    from math_verify import parse

    return parse(gold, parsing_timeout=timeout)


def check(gold: str, pred: str, timeout: int | None = None) -> CheckResult:
    """``parse`` both sides and ``verify``, exactly as math-verify decides it.

    ``timeout`` is math-verify's own, in whole seconds (signal-based, main thread only);
    ``None`` turns it off, which is what makes the call safe in any thread.
    """
    from math_verify import parse, verify

    if plain_integer(gold) is not None:
        number = plain_integer(pred) or first_integer_candidate(pred)
        if number is not None:  # what parse + verify would decide, without sympy
            return CheckResult(True, number, int(gold) == int(number))
    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        gold_parsed = _parse_gold(gold, timeout)
    except Exception:  # math-verify raises on some malformed input: treat as unparseable
        gold_parsed = []
    if not gold_parsed:
        return CheckResult(False, None, False)
    try:
        pred_parsed = parse(pred, parsing_timeout=timeout)
    except Exception:
        pred_parsed = []
    if not pred_parsed:
        return CheckResult(True, None, False)
    try:
        last = pred_parsed[-1]
        shown = last if isinstance(last, str) else str(pred_parsed[0])
        equal = bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout))
    except Exception:
        return CheckResult(True, None, False)
    return CheckResult(True, shown, equal)


# An integer exactly as sympy's parser reads it back (no leading zeros: "-01" is not valid).
_PLAIN_INT = re.compile(r"-?[1-9][0-9]{0,14}|0")


def plain_integer(text: str) -> str | None:
    """``text`` if it is an integer of at most 15 digits in canonical form, else ``None``."""
    return text if _PLAIN_INT.fullmatch(text) else None


@functools.lru_cache(maxsize=1)
def _candidate_patterns() -> list:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig
    from math_verify.parser import get_extraction_regexes

    target_res = get_extraction_regexes([LatexExtractionConfig(), ExprExtractionConfig()])
    patterns = [(p, t, prio) for pats, t in target_res for p, prio in pats]
    patterns.sort(key=lambda x: x[2])
    return [[(p, t) for p, t, _ in group] for _, group in groupby(patterns, key=lambda x: x[2])]


def first_integer_candidate(pred: str) -> str | None:
    """The integer ``math_verify.parse(pred)`` returns, found without sympy; else ``None``.

    Walks math-verify's own candidate order (its default extraction regexes grouped by priority;
    within the first group that matches, rightmost end first, then leftmost start; the order of
    ``math_verify.parser.extract_target_from_pred``). When that first candidate is a plain-number
    match with an integer, no decimals and no percent sign, math-verify's ``extract_expr``
    returns ``Number`` of that integer (commas and spaces removed, leading zeros stripped), so
    the result is known without building it. Any other first candidate (LaTeX, decimals,
    percentages, ``-0…``, more than 15 or non-ASCII digits) gives ``None``: ask math-verify.
    """
    from math_verify import ExprExtractionConfig

    for group in _candidate_patterns():
        best = None
        for pattern, target in group:
            for match in pattern.finditer(pred):
                key = (match.end(), -match.start())
                if best is None or key > best[0]:
                    best = (key, match, target)
        if best is None:
            continue
        _, match, target = best
        if not isinstance(target, ExprExtractionConfig):
            return None
        groups = match.groupdict()
        integer = next((v for k, v in groups.items() if k.startswith("integer") and v), "")
        decimal = next((v for k, v in groups.items() if k.startswith("decimal") and v), "")
        if decimal or groups.get("percent") or not integer:
            return None
        number = integer.translate(str.maketrans("", "", ", ")).lstrip("0") or "0"
        return plain_integer(number)
    return None
