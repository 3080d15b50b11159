"""Worker process for math-verify checks (started by :mod:`rewards.mathpool`).

Reads JSON lines ``[id, gold, pred]`` on stdin and writes ``[id, gold_ok, shown, equal]`` on
stdout, one line per request, flushing after each so the parent can tell which request hangs.
Exits at end of input. Memory is capped so a runaway evaluation fails instead of swapping.
"""

from __future__ import annotations

import functools
import json
import logging
import sys

MEMORY_LIMIT_BYTES = 2 << 30


def _limit_memory() -> None:
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = (
            MEMORY_LIMIT_BYTES if hard == resource.RLIM_INFINITY else min(hard, MEMORY_LIMIT_BYTES)
        )
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):  # not available on this platform
        pass


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> list:
    from math_verify import parse

    return parse(gold, parsing_timeout=None)


def check(gold: str, pred: str) -> list:
    """``[gold_ok, shown, equal]`` for one pair, exactly as math-verify decides it."""
    from math_verify import parse, verify

    try:
        gold_parsed = _parse_gold(gold)
    except Exception:
        gold_parsed = []
    if not gold_parsed:
        return [False, None, False]
    try:
        pred_parsed = parse(pred, parsing_timeout=None)
    except Exception:
        pred_parsed = []
    if not pred_parsed:
        return [True, None, False]
    shown = pred_parsed[-1] if isinstance(pred_parsed[-1], str) else str(pred_parsed[0])
    try:
        equal = bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))
    except Exception:
        equal = False
    return [True, shown, equal]


def main() -> None:
    _limit_memory()
    logging.disable(logging.WARNING)
    import math_verify  # noqa: F401  (import before announcing readiness)

    sys.set_int_max_str_digits(100_000)
    out = sys.stdout
    out.write('["ready"]\n')
    out.flush()
    for line in sys.stdin:
        try:
            rid, gold, pred = json.loads(line)
        except ValueError:
            continue
        try:
            result = check(gold, pred)
        except MemoryError:
            result = [True, None, False]
        out.write(json.dumps([rid, *result]) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
