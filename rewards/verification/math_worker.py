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

# Checked once before the worker says it is ready: math-verify and sympy build their LaTeX and
# expression parsers on first use, 0.1-0.3 s a worker, which a training step's scoring would
# otherwise wait for (0.13-0.29 s of SmolLM2's steps 2-6 on an H200, against 5 ms later).
# The LaTeX parser (ANTLR) also builds its prediction cache as it meets new shapes of input: a
# young model's prose between dollar signs ("the cost of $1.10 (total) and the bat costing $",
# words read as products of variables, commas as sets) took 0.17 s of one step's scoring at its
# first parse on an H200's host, 0.09 s on 2 cores, and 0.016 s after the last four checks here.
WARM_UP_CHECKS = (
    ("\\frac{1}{2}", "So $x = \\frac{2}{4}$ and 2 + 3 = 5: \\boxed{0.5}"),
    ("7", "Seven apples: 3 + 4 and $x^2 - 1$"),
    ("0.5", "the price is $2.40 (each) and a pen costs $"),
    ("0.5", "so $x = 2y, z = 3$ (each), and $a + b = c$"),
    ("0.5", "Each bag is $3.50 per pound, for 4 pounds, so the total is 14 dollars$"),
    ("0.5", "$\\text{total} = 12 \\times 3 = 36$ apples, \\(5 - 1\\) left and 20%"),
)


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
    for gold, pred in WARM_UP_CHECKS:  # imports math-verify too
        check(gold, pred)
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
