"""Worker process for math-verify checks (started by :mod:`rewards.verification.mathpool`).

Reads JSON lines ``[id, gold, pred]`` on stdin and writes ``[id, gold_ok, shown, equal]`` on
stdout, one line per request, flushing after each so the parent can tell which request hangs.
Exits at end of input. Memory is capped so a runaway evaluation fails instead of swapping.
"""

from __future__ import annotations

import json
import logging
import sys

from rewards.verification.mathcheck import check

MEMORY_LIMIT_BYTES = 2 << 30


def _limit_memory() -> None:
    try:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = MEMORY_LIMIT_BYTES
        if hard != resource.RLIM_INFINITY:
            limit = min(hard, limit)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):  # not available on this platform
        pass


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
            r = check(gold, pred)
            result = [r.gold_ok, r.shown, r.equal]
        except MemoryError:
            result = [True, None, False]
        out.write(json.dumps([rid, *result]) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
