"""Bounded work in /score_preview: the issue's two repros, before (unbounded) and after.

"Before" is what the endpoint did until now: ``rewards.composer.score`` on the whole request,
with no time budget (math-verify bounded only per check). "After" is ``ui.api.score_preview``:
size caps, then the same scoring under the call's time budget. Both run in this process, in the
same run, so the ratios compare like with like. (Language identification now works in chunks
of 100,000 characters on both paths, which keeps "before"'s memory flat; the code before that
change took +1,006 MB for the default 10M characters, on the same machine.)

Repros (issue 11, S4): ``--completions`` x ``--chars`` characters scored with ``language``
(the issue: 1,000 x 100,000, 75-90 s and +8.4 GB), and ``--towers`` answers like
``$10^{10^{N}}$`` scored with ``correctness`` (the issue: 20, 72 s). The defaults are a tenth of
the first repro so that it runs on a laptop; pass ``--chars 100000`` for the full one.

Ends with one JSON line: seconds and peak resident-memory growth (MB) of each case.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewards.composer import score
from rewards.spec import RewardSpec
from rewards.verification.mathpool import get_checker
from ui import api
from ui.api import ApiError
from ui.shared.context import AppContext

LANGUAGE = {"components": [{"name": "language", "params": {"language": "en"}}]}
CORRECTNESS = {"components": [{"name": "correctness"}]}


def measure(fn) -> tuple[float, float, object]:
    """(seconds, peak RSS growth in MB, result or the ApiError raised) of ``fn()``."""
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], proc.memory_info().rss)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    start = time.perf_counter()
    try:
        result = fn()
    except ApiError as exc:
        result = exc
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    return seconds, (peak[0] - base) / 1e6, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--completions", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=10_000)
    parser.add_argument("--towers", type=int, default=20)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)

    def english(chars: int) -> str:
        return ("The answer is twenty four. " * (chars // 27 + 1))[:chars]

    big = [english(args.chars)] * args.completions
    towers = [f"<answer>$10^{{10^{{{n}}}}}$</answer>" for n in range(10, 10 + args.towers)]
    get_checker().check_many([("1", "1")])  # math workers started outside the timings
    score(RewardSpec.from_dict(LANGUAGE), [""], [english(100)])  # the language model, too

    with tempfile.TemporaryDirectory() as tmp:
        ctx = AppContext(Path(tmp))
        # After first: peak memory is measured against the process's size at each start.
        after_big = measure(lambda: api.score_preview(ctx, LANGUAGE, big))
        largest = [english(api.MAX_API_TEXT_CHARS)] * (
            api.MAX_API_TOTAL_CHARS // api.MAX_API_TEXT_CHARS
        )
        after_largest = measure(lambda: api.score_preview(ctx, LANGUAGE, largest))
        after_towers = measure(
            lambda: api.score_preview(ctx, CORRECTNESS, towers, answers=["24"] * len(towers))
        )
        ctx.close()
    answers = ["24"] * len(towers)
    before_towers = measure(
        lambda: score(RewardSpec.from_dict(CORRECTNESS), [""] * len(towers), towers, answers)
    )
    before_big = measure(lambda: score(RewardSpec.from_dict(LANGUAGE), [""] * len(big), big))

    result = {
        "language_completions": args.completions,
        "language_chars_each": args.chars,
        "before_language_s": round(before_big[0], 2),
        "before_language_peak_mb": round(before_big[1], 1),
        "after_language_s": round(after_big[0], 4),
        "after_language_peak_mb": round(after_big[1], 1),
        "after_language_refused": isinstance(after_big[2], ApiError),
        "largest_accepted_chars": len(largest) * len(largest[0]),
        "largest_accepted_s": round(after_largest[0], 2),
        "largest_accepted_peak_mb": round(after_largest[1], 1),
        "towers": args.towers,
        "before_towers_s": round(before_towers[0], 2),
        "after_towers_s": round(after_towers[0], 2),
        "towers_speedup_x": round(before_towers[0] / max(after_towers[0], 1e-9), 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
