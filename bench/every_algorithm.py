"""Every algorithm on a real model: GRPO, RLOO and PPO, each with its own suggestion, in one call.

Each (algorithm, seed) trains the config ``export-config --model M --algorithm A`` writes for
this device (:func:`engine.config.suggestions.suggested_config`) through ``python -m engine
train`` for ``--minutes`` of wall clock, with held-out evaluation before, every
``--eval-every`` steps and at the end. Prints each run's held-out accuracy, strict accuracy,
format rate and training reward against minutes since its first evaluation, its steps and
seconds per step, and the minutes it took to reach ``--target`` held-out accuracy; ends with
one JSON line (snake_case keys, units in the names).

``--seeds`` are run for every algorithm named in ``--seeds-for`` (default: all); the others
run at the first seed. ``--concurrent`` runs them side by side, one GPU each (``gpu_ids``) and
an equal share of the cores, so five 5-minute runs fit one call on a host of 8 GPUs. Every run
compiles cold, in caches of its own, so the order of the runs favours none of them.
``--override-for ppo='{"ppo": {...}}'`` changes one algorithm's config; a run named
``ALGORITHM+LABEL`` (``ppo+group``) is that algorithm with its own ``--override-for``, a variant
to compare with it in the same call.

    python bench/every_algorithm.py --algorithms grpo rloo ppo --minutes 5 --seeds 0 1 2 \\
        --seeds-for grpo --concurrent
    python bench/every_algorithm.py --algorithms ppo ppo+group --concurrent \
        --override-for 'ppo+group={"ppo": {"reward_normalization": "group"}}'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from learning_curve import EVAL_NAMES, summarise
from real_model import card_name, commit, curve
from studio_run import collect, launch

from engine.config.run_config import ALGORITHMS, RunConfig
from engine.config.suggestions import suggested_config
from engine.models.specs import ENGLISH_MODEL_ALIAS
from engine.tracking import metric_names


def merged(data: dict, override: dict) -> dict:
    for section, values in override.items():
        if isinstance(values, dict):
            data[section].update(values)
        else:
            data[section] = values
    return data


def algorithm_of(name: str) -> str:
    """The algorithm of a run name: ``ppo`` or a variant ``ppo+LABEL``."""
    algorithm = name.partition("+")[0]
    if algorithm not in ALGORITHMS:
        raise SystemExit(f"{name!r}: the algorithm must be one of {', '.join(ALGORITHMS)}")
    return algorithm


def run_config(name: str, seed: int, gpu: int | None, args: argparse.Namespace) -> RunConfig:
    on_gpu = None if args.device == "auto" else args.device == "gpu"
    data = suggested_config(args.model, on_gpu, algorithm_of(name)).to_dict()
    data["name"] = f"every algorithm {name} seed {seed}"
    data["training"].update(
        steps=100_000,
        time_budget_minutes=args.minutes,
        eval_steps=args.eval_every,
        eval_samples=args.eval_samples,
        save_steps=0,
        seed=seed,
        gpu_ids="" if gpu is None else str(gpu),
    )
    data = merged(data, json.loads(args.override))
    return RunConfig.from_dict(merged(data, args.overrides.get(name, {})))


def minutes_to(points: list[tuple[float, float]], target: float) -> float | None:
    return next((m for m, v in points if v >= target), None)


def figures_of(data_dir: Path, args: argparse.Namespace) -> dict:
    run, series = collect(data_dir)
    result = summarise(run, series, EVAL_NAMES)
    evals = series.get(metric_names.EVAL_ACCURACY, [])
    start = evals[0][2] if evals else 0.0
    accuracy = curve(series, metric_names.EVAL_ACCURACY, start)
    peaks = [v for _, v, _ in series.get(metric_names.PEAK_MEMORY, [])]
    figures = {
        "steps": result["steps"],
        "seconds_per_step": result["seconds_per_step"],
        "peak_gib": round(max(peaks), 2) if peaks else None,
        "best_accuracy": max((v for _, v in accuracy), default=None),
        "minutes_to_target": minutes_to(accuracy, args.target),
        "accuracy_curve": accuracy,
        "strict_accuracy_curve": curve(series, metric_names.EVAL_STRICT_ACCURACY, start),
        "format_rate_curve": curve(series, metric_names.EVAL_FORMAT_RATE, start),
        "reward_per_10_steps": result["reward_curve"],
    }
    for key in EVAL_NAMES:
        figures[f"{key}_before"] = result[f"{key}_before"]
        figures[f"{key}_after"] = result[f"{key}_after"]
    ev = [v for _, v, _ in series.get(metric_names.PPO_EXPLAINED_VARIANCE, [])]
    if ev:  # PPO: is the critic learning? (its last tenth of steps)
        figures["explained_variance_last"] = round(
            statistics.fmean(ev[-max(1, len(ev) // 10) :]), 3
        )
    return figures


def planned_runs(args: argparse.Namespace) -> list[tuple[str, int]]:
    seeded = set(args.seeds_for or args.algorithms)
    return [
        (a, seed)
        for a in args.algorithms
        for seed in (args.seeds if a in seeded else args.seeds[:1])
    ]


def train_all(runs: list[tuple[str, int]], tmp: Path, args: argparse.Namespace) -> list[Path]:
    dirs = [tmp / f"{a.replace('+', '-')}-seed{seed}" for a, seed in runs]
    if not args.concurrent:
        for (a, seed), data_dir in zip(runs, dirs, strict=True):
            config = run_config(a, seed, None, args)
            if launch(config, data_dir, cold_compile=True).wait() != 0:
                log = (data_dir / "train.log").read_text(errors="replace")
                raise SystemExit(f"the {a} seed {seed} run failed:\n{log[-3000:]}")
        return dirs
    from engine.runtime.devices import list_gpus

    gpus = [g.index for g in list_gpus()]
    if len(gpus) < len(runs):
        raise SystemExit(f"--concurrent needs a GPU per run: {len(runs)} runs, {len(gpus)} GPUs")
    cores = max(1, (os.cpu_count() or 1) // len(runs))
    procs = [
        launch(
            run_config(a, seed, gpus[i], args),
            dirs[i],
            cpus=range(i * cores, (i + 1) * cores),
            threads=cores,
            cold_compile=True,
        )
        for i, (a, seed) in enumerate(runs)
    ]
    failed = [f"{a} seed {s}" for (a, s), p in zip(runs, procs, strict=True) if p.wait() != 0]
    if failed:
        raise SystemExit(f"runs failed: {failed}; logs in {tmp}")
    return dirs


def summary(results: list[dict]) -> dict:
    """Per algorithm: the median final and best held-out accuracy and minutes to the target."""
    out = {}
    for a in dict.fromkeys(r["algorithm"] for r in results):
        mine = [r for r in results if r["algorithm"] == a]
        finals = [r["accuracy_after"] for r in mine if r["accuracy_after"] is not None]
        reached = [r["minutes_to_target"] for r in mine]
        out[a] = {
            "seeds": [r["seed"] for r in mine],
            "accuracy_after_median": round(statistics.median(finals), 3) if finals else None,
            "accuracy_after_range": [min(finals), max(finals)] if finals else None,
            "minutes_to_target": reached,
            "seconds_per_step_median": statistics.median(
                r["seconds_per_step"] for r in mine if r["seconds_per_step"]
            )
            if any(r["seconds_per_step"] for r in mine)
            else None,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=ENGLISH_MODEL_ALIAS)
    parser.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    parser.add_argument(
        "--algorithms", nargs="+", default=list(ALGORITHMS), help="grpo, rloo, ppo, or ppo+LABEL"
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--seeds-for", nargs="*", default=None, help="runs given every seed")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--target", type=float, default=0.4, help="held-out accuracy to time")
    parser.add_argument("--eval-every", type=int, default=10, help="steps between evaluations")
    parser.add_argument("--eval-samples", type=int, default=200)
    parser.add_argument("--concurrent", action="store_true", help="one GPU per run, side by side")
    parser.add_argument("--override", default="{}", help="JSON merged into every config")
    parser.add_argument(
        "--override-for",
        nargs="*",
        default=[],
        metavar="ALGORITHM=JSON",
        help="JSON merged into one algorithm's config",
    )
    parser.add_argument("--keep", type=Path, default=None, help="train in this folder, kept")
    args = parser.parse_args()
    for name in args.algorithms:
        algorithm_of(name)
    args.overrides = {}
    for pair in args.override_for:
        algorithm, _, text = pair.partition("=")
        args.overrides[algorithm] = json.loads(text)
    runs = planned_runs(args)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="studio-every-") as tmp:
        dirs = train_all(runs, args.keep or Path(tmp), args)
        results = [
            {"algorithm": a, "seed": seed, **figures_of(d, args)}
            for (a, seed), d in zip(runs, dirs, strict=True)
        ]
    print(f"all runs done in {time.monotonic() - started:.0f} s")
    for r in results:
        print(
            f"{r['algorithm']} seed {r['seed']}: {r['steps']} steps, {r['seconds_per_step']} "
            f"s/step, {args.target:.0%} held-out accuracy after {r['minutes_to_target']} min"
        )
        for key in ("accuracy", "strict_accuracy", "format_rate"):
            print(f"  {key:<16} {r[f'{key}_before']} -> {r[f'{key}_after']}")
            print(f"    (minutes, value): {r[f'{key}_curve']}")
        print(f"  reward per 10 steps: {r['reward_per_10_steps']}")
    figures = {
        "card": card_name(),
        "commit": commit(),
        "model": args.model,
        "budget_minutes": args.minutes,
        "target_accuracy": args.target,
        "concurrent": args.concurrent,
        "wall_s": round(time.monotonic() - started),
        "summary": summary(results),
        "runs": results,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
