"""Does RL with the default settings teach the default model? Held-out accuracy before and after.

Runs the product itself: ``python -m engine train`` on the default config, for a wall-clock
budget, with held-out evaluation (sampled at the training temperature) before and after. Prints
the reward curve and, on its last line, one JSON object with ``accuracy_before``,
``accuracy_after``, ``strict_accuracy_before``, ``strict_accuracy_after``,
``format_rate_before`` and ``format_rate_after`` per algorithm.

    python bench/learning_curve.py --minutes 10 --algorithms grpo
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from studio_run import train_via_cli

from engine import metric_names
from engine.config import RunConfig

EVAL_NAMES = {
    "accuracy": metric_names.EVAL_ACCURACY,
    "strict_accuracy": metric_names.EVAL_STRICT_ACCURACY,
    "format_rate": metric_names.EVAL_FORMAT_RATE,
}


def bench_config(algorithm: str, minutes: float, eval_samples: int, overrides: dict) -> RunConfig:
    data = RunConfig(algorithm=algorithm).to_dict()
    data["name"] = f"learning curve {algorithm}"
    data["training"].update(
        steps=100_000,
        time_budget_minutes=minutes,
        eval_steps=0,
        eval_samples=eval_samples,
        save_steps=0,
    )
    for section, values in overrides.items():
        if isinstance(values, dict):
            data[section].update(values)
        else:
            data[section] = values
    return RunConfig.from_dict(data)


def run_once(config: RunConfig, data_dir: Path) -> dict:
    started = time.monotonic()
    run, series = train_via_cli(config, data_dir)
    result = {"steps": run.last_step, "wall_s": round(time.monotonic() - started, 1)}
    for key, name in EVAL_NAMES.items():
        values = series.get(name, [])
        result[f"{key}_before"] = values[0][1] if values else None
        result[f"{key}_after"] = values[-1][1] if len(values) > 1 else None
    rewards = [v for _, v, _ in series.get(metric_names.REWARD_TOTAL, [])]
    step_times = [v for _, v, _ in series.get(metric_names.STEP_TIME, [])]
    result["seconds_per_step"] = round(statistics.median(step_times), 3) if step_times else None
    result["reward_curve"] = [
        round(statistics.fmean(rewards[i : i + 10]), 3) for i in range(0, len(rewards), 10)
    ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--algorithms", nargs="+", default=["grpo"])
    parser.add_argument("--eval-samples", type=int, default=500)
    parser.add_argument("--override", default="{}", help="JSON merged into the config sections")
    args = parser.parse_args()
    overrides = json.loads(args.override)
    figures = {}
    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        for algorithm in args.algorithms:
            config = bench_config(algorithm, args.minutes, args.eval_samples, overrides)
            result = run_once(config, Path(tmp))
            print(
                f"{algorithm}: {result['steps']} steps in {result['wall_s']} s "
                f"({result['seconds_per_step']} s/step)"
            )
            for key in EVAL_NAMES:
                print(f"  {key:<16} {result[f'{key}_before']:.3f} -> {result[f'{key}_after']:.3f}")
            print(f"  reward per 10 steps: {result['reward_curve']}")
            figures[algorithm] = {k: v for k, v in result.items() if k != "reward_curve"}
            figures[algorithm]["reward_first_10"] = result["reward_curve"][0]
            figures[algorithm]["reward_last_10"] = result["reward_curve"][-1]
    flat = {
        f"{alg}_{k}" if len(figures) > 1 else k: v
        for alg, values in figures.items()
        for k, v in values.items()
    }
    print(json.dumps(flat))


if __name__ == "__main__":
    main()
