"""Does RL with the default settings teach the default model? Held-out accuracy over time.

Runs the product itself: ``python -m engine train`` on the default config for a wall-clock
budget, with held-out evaluation (sampled at the training temperature) at the start, every
``--eval-every`` steps and at the end. ``--budget-factor ppo=2`` gives an algorithm a multiple
of the budget; ``--concurrent`` runs the algorithms side by side, each pinned to its own
``--threads`` cores (on a machine with enough of them), instead of one after the other.

``--task agent`` starts from the built-in agent run instead (``export-config --task agent``:
the shipped agent model, the calculator, multi-digit products), whose held-out evaluation goes
through the tool loop: it reports the share of held-out rollouts with a useful call (a parsed
call whose result is the gold answer) and with any call, besides accuracy.

With both GRPO and PPO it also prints when PPO first reached GRPO's final gain in held-out
accuracy, as a multiple of GRPO's budget (target: within 2x). Prints the curves and, on its
last line, one JSON object with the figures per algorithm.

    python bench/learning_curve.py --minutes 10 --algorithms grpo ppo --budget-factor ppo=2
    python bench/learning_curve.py --minutes 10 --task agent --eval-every 20 --eval-samples 100
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from studio_run import Series, collect, launch

from engine.config.agent import agent_config
from engine.config.run_config import RunConfig
from engine.tracking import metric_names

EVAL_NAMES = {
    "accuracy": metric_names.EVAL_ACCURACY,
    "strict_accuracy": metric_names.EVAL_STRICT_ACCURACY,
    "format_rate": metric_names.EVAL_FORMAT_RATE,
}
AGENT_EVAL_NAMES = {
    "accuracy": metric_names.EVAL_ACCURACY,
    "useful_call_rate": metric_names.EVAL_USEFUL_CALL_RATE,
    "tool_call_rate": metric_names.EVAL_TOOL_CALL_RATE,
    "malformed_call_rate": metric_names.EVAL_MALFORMED_CALL_RATE,
}


def bench_config(algorithm: str, minutes: float, args: argparse.Namespace) -> RunConfig:
    if args.task == "agent":
        data = agent_config().to_dict()
        data["algorithm"] = algorithm
    else:
        data = RunConfig(algorithm=algorithm).to_dict()
    data["name"] = f"learning curve {args.task} {algorithm}"
    data["training"].update(
        steps=100_000,
        time_budget_minutes=minutes,
        eval_steps=args.eval_every,
        eval_samples=args.eval_samples,
        save_steps=0,
    )
    for section, values in json.loads(args.override).items():
        if isinstance(values, dict):
            data[section].update(values)
        else:
            data[section] = values
    return RunConfig.from_dict(data)


def summarise(run, series: Series, names: dict[str, str]) -> dict:
    """Before/after figures, and accuracy against minutes since the first evaluation."""
    result: dict = {"steps": run.last_step}
    for key, name in names.items():
        values = series.get(name, [])
        result[f"{key}_before"] = values[0][1] if values else None
        result[f"{key}_after"] = values[-1][1] if len(values) > 1 else None
    evals = series.get(metric_names.EVAL_ACCURACY, [])
    start = evals[0][2] if evals else 0.0
    result["accuracy_curve"] = [(round((t - start) / 60, 2), round(v, 3)) for _, v, t in evals]
    rewards = [v for _, v, _ in series.get(metric_names.REWARD_TOTAL, [])]
    step_times = [v for _, v, _ in series.get(metric_names.STEP_TIME, [])]
    result["seconds_per_step"] = round(statistics.median(step_times), 3) if step_times else None
    result["reward_curve"] = [
        round(statistics.fmean(rewards[i : i + 10]), 3) for i in range(0, len(rewards), 10)
    ]
    return result


def minutes_to_gain(curve: list[tuple[float, float]], gain: float) -> float | None:
    """When accuracy first rose ``gain`` above its starting value, in minutes."""
    if not curve:
        return None
    before = curve[0][1]
    return next((m for m, acc in curve[1:] if acc - before >= gain), None)


def parse_factors(pairs: list[str]) -> dict[str, float]:
    factors = {}
    for pair in pairs:
        algorithm, _, factor = pair.partition("=")
        factors[algorithm] = float(factor)
    return factors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--algorithms", nargs="+", default=["grpo"])
    parser.add_argument("--budget-factor", nargs="*", default=[], metavar="ALGORITHM=FACTOR")
    parser.add_argument("--eval-samples", type=int, default=400)
    parser.add_argument("--eval-every", type=int, default=40, help="steps between evaluations")
    parser.add_argument("--concurrent", action="store_true")
    parser.add_argument("--threads", type=int, default=2, help="cores per run with --concurrent")
    parser.add_argument("--override", default="{}", help="JSON merged into the config sections")
    parser.add_argument("--task", choices=("arithmetic", "agent"), default="arithmetic")
    args = parser.parse_args()
    names = AGENT_EVAL_NAMES if args.task == "agent" else EVAL_NAMES
    factors = parse_factors(args.budget_factor)
    budgets = {a: args.minutes * factors.get(a, 1.0) for a in args.algorithms}
    results = {}
    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        dirs = {a: Path(tmp) / a for a in args.algorithms}
        started = time.monotonic()
        if args.concurrent:
            procs = {
                a: launch(
                    bench_config(a, budgets[a], args),
                    dirs[a],
                    cpus=range(i * args.threads, (i + 1) * args.threads),
                    threads=args.threads,
                )
                for i, a in enumerate(args.algorithms)
            }
            failed = [a for a, proc in procs.items() if proc.wait() != 0]
            if failed:
                raise SystemExit(f"runs failed: {failed}; logs in {tmp}")
        else:
            for a in args.algorithms:
                if launch(bench_config(a, budgets[a], args), dirs[a]).wait() != 0:
                    log = (dirs[a] / "train.log").read_text(errors="replace")
                    raise SystemExit(f"the {a} run failed:\n{log[-3000:]}")
        print(f"all runs done in {time.monotonic() - started:.0f} s")
        for a in args.algorithms:
            results[a] = summarise(*collect(dirs[a]), names)

    figures = {}
    for a, result in results.items():
        per_step = result["seconds_per_step"]
        print(f"{a}: {result['steps']} steps in {budgets[a]:g} min ({per_step} s/step)")
        for key in names:
            before, after = result[f"{key}_before"], result[f"{key}_after"]
            print(f"  {key:<20} {before} -> {after}")
        print(f"  held-out accuracy (minutes, accuracy): {result['accuracy_curve']}")
        print(f"  reward per 10 steps: {result['reward_curve']}")
        for key, value in result.items():
            if key not in ("accuracy_curve", "reward_curve"):
                figures[f"{a}_{key}"] = value
        figures[f"{a}_budget_minutes"] = budgets[a]
    if "grpo" in results and "ppo" in results:
        grpo = results["grpo"]
        gain = grpo["accuracy_after"] - grpo["accuracy_before"]
        reached = minutes_to_gain(results["ppo"]["accuracy_curve"], gain)
        ratio = None if reached is None else round(reached / budgets["grpo"], 2)
        print(
            f"PPO reached GRPO's gain (+{gain:.3f}) after {reached} min: {ratio}x GRPO's "
            "budget (target <= 2x)"
            if reached is not None
            else f"PPO did not reach GRPO's gain (+{gain:.3f}) in {budgets['ppo']:g} min"
        )
        figures["grpo_accuracy_gain"] = round(gain, 4)
        figures["ppo_minutes_to_grpo_gain"] = reached
        figures["ppo_time_to_grpo_gain_ratio"] = ratio
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
