"""Weight sweeps on cached scores: 1,000 weight points over 256 samples (issue 23).

Scores 256 completions (32 prompts x 8) once with the "hand-tuned GRPO script" preset's
rule-based components and the probes once, then times :func:`rewards.lab.sweep.sweep` over a
one-weight grid of ``--points`` values and a two-weight grid of about as many: totals, TRL's GRPO
advantages with each component's part, zero-variance share, correctness correlation and every
probe's payoff at every point. The one-off scoring is reported apart (``score_s``, ``probes_s``).

Ends with one JSON line: ``points``, ``samples``, ``components``, the sweep times in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewards.lab.sweep import SweepAxis, sweep
from rewards.spec import preset
from tests.rewards.lab_batch import generations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5, help="best of this many sweeps")
    args = parser.parse_args()
    batch = generations(groups=32, per_group=8, seed=0)
    spec = preset("hand-tuned GRPO script")
    t0 = time.perf_counter()
    matrix = batch.matrix(spec)
    t1 = time.perf_counter()
    probes = batch.probes(spec)
    t2 = time.perf_counter()
    one = [SweepAxis.linspace("format", 0.0, 2.0, args.points)]
    side = max(2, round(args.points**0.5))
    two = [
        SweepAxis.linspace("format", 0.0, 2.0, side),
        SweepAxis.linspace("conciseness", 0, 2, side),
    ]

    def best(axes) -> float:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            sweep(matrix, axes, probes=probes)
            times.append(time.perf_counter() - start)
        return min(times)

    print(
        json.dumps(
            {
                "points": args.points,
                "samples": matrix.samples,
                "components": len(matrix.names),
                "probes": len(probes.names),
                "sweep_s": round(best(one), 4),
                "sweep_2d_points": side * side,
                "sweep_2d_s": round(best(two), 4),
                "score_s": round(t1 - t0, 3),
                "probes_s": round(t2 - t1, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
