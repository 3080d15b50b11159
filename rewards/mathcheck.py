"""One math-verify check: does the prediction equal the gold? (used in workers and exports).

This module imports only math-verify, so exported reward modules can include it verbatim.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass


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
