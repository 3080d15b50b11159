"""PPO's step cost relative to GRPO's, at equal tokens, on the default model and task.

Both algorithms run the default config through ``python -m engine train`` for the same number
of steps (8 prompts x 8 completions of at most 96 tokens a step), alternating GRPO and PPO over
several rounds so that a change in the machine's load hits both. A step's cost is the wall time
between two consecutive steps' metric writes (everything the worker does in a step: sampling,
scoring, the update, storing metrics and samples), divided by the tokens (prompt and completion)
the step processed, since the two policies drift to different completion lengths. The first
steps of each run warm up and are left out. Prints the median seconds per 1,000 tokens of each
and their ratio (target: PPO <= 1.3x GRPO).

    python bench/ppo_step_cost.py --steps 12 --rounds 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
from pathlib import Path

from studio_run import Series, train_via_cli

from engine.config.run_config import RunConfig
from engine.tracking import metric_names

WARMUP_STEPS = 2


def step_costs(series: Series) -> list[tuple[float, float]]:
    """(seconds, tokens) of each step after the warm-up, from the cumulative token count."""
    stamps = series[metric_names.NUM_TOKENS]  # one row per step: (step, tokens so far, time)
    return [
        (b[2] - a[2], b[1] - a[1])
        for a, b in itertools.pairwise(stamps)
        if a[0] >= WARMUP_STEPS and b[0] == a[0] + 1
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    costs: dict[str, list[tuple[float, float]]] = {"grpo": [], "ppo": []}
    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        for round_ in range(args.rounds):
            order = ["grpo", "ppo"] if round_ % 2 == 0 else ["ppo", "grpo"]
            for algorithm in order:
                config = RunConfig.from_dict(
                    {
                        "name": f"step cost {algorithm}",
                        "algorithm": algorithm,
                        "training": {"steps": args.steps, "eval_samples": 0, "save_steps": 0},
                    }
                )
                _, series = train_via_cli(config, Path(tmp) / f"{algorithm}-{round_}")
                costs[algorithm] += step_costs(series)
                print(f"round {round_ + 1} {algorithm}: {len(costs[algorithm])} steps so far")
    figures = {}
    for algorithm, steps in costs.items():
        seconds = statistics.median(s for s, _ in steps)
        tokens = statistics.median(t for _, t in steps)
        per_k = statistics.median(s / t * 1000 for s, t in steps)
        print(
            f"{algorithm}: {seconds:.2f} s/step, {tokens:.0f} tokens/step, "
            f"{per_k:.3f} s per 1,000 tokens ({len(steps)} steps)"
        )
        figures[f"{algorithm}_step_s"] = round(seconds, 3)
        figures[f"{algorithm}_tokens_per_step"] = round(tokens, 1)
        figures[f"{algorithm}_s_per_1k_tokens"] = round(per_k, 4)
    ratio = figures["ppo_s_per_1k_tokens"] / figures["grpo_s_per_1k_tokens"]
    print(f"PPO / GRPO step cost at equal tokens: {ratio:.2f}x (target <= 1.3x)")
    figures["ppo_step_cost_ratio"] = round(ratio, 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
