"""Does a real pretrained model learn with the suggested settings? And what does it peak at?

Learning curve (the default): ``python -m engine train`` on the config that ``export-config
--model smollm2-135m-instruct --algorithm A`` suggests for this device
(``engine.config.suggestions``), on the built-in task, for ``--minutes`` of wall clock, with
held-out evaluation before, every ``--eval-every`` steps and at the end. Prints held-out
accuracy, strict-format rate and strict accuracy against minutes since the first evaluation,
the training reward, seconds per step, the micro-batch the worker picked and the peak GPU
memory beside its estimate.

Memory points (``--memory-points 32,64``): a few GRPO steps of the same model at 32 prompts x
8 completions x ``--tokens`` new tokens for each micro-batch, each in its own process; the
measured peak (``torch.cuda.max_memory_allocated``, the worker's ``perf/peak_memory_gib``)
beside the estimate (engine/planning/memory.py) at the run's longest prompt.

    python bench/real_model.py --minutes 5 --eval-every 10
    python bench/real_model.py --memory-points 32,64,128 --tokens 256 --steps 3
    python bench/real_model.py --minutes 1 --override '{"training": {"learning_rate": 1e-4}}'
    python bench/real_model.py --minutes 5 --algorithm ppo   # that algorithm's own suggestion

GRPO, RLOO and PPO side by side, over seeds, in one call: bench/every_algorithm.py.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from learning_curve import EVAL_NAMES, summarise
from studio_run import ROOT, Series, collect, launch, train_via_cli

from engine.config.run_config import ALGORITHMS, RunConfig
from engine.config.suggestions import suggested_config
from engine.models.specs import ENGLISH_MODEL_ALIAS
from engine.tracking import metric_names


def configured(args: argparse.Namespace, generation: dict | None = None, **training) -> RunConfig:
    on_gpu = None if args.device == "auto" else args.device == "gpu"
    data = suggested_config(args.model, on_gpu, args.algorithm).to_dict()
    data["name"] = f"real model {args.model} {args.algorithm}"
    data["training"].update(save_steps=0, **training)
    data["generation"].update(generation or {})
    for section, values in json.loads(args.override).items():
        if isinstance(values, dict):
            data[section].update(values)
        else:
            data[section] = values
    return RunConfig.from_dict(data)


def card_name() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def commit() -> str:
    """The code's commit: git's, else a COMMIT file beside the tree (a copy without .git)."""
    marker = ROOT / "COMMIT"
    if marker.is_file():
        return marker.read_text().strip()
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    return done.stdout.decode().strip() or "unknown"


def curve(series: Series, name: str, start: float) -> list[tuple[float, float]]:
    return [(round((t - start) / 60, 2), round(v, 3)) for _, v, t in series.get(name, [])]


def over_like_work(timed: list[tuple], longest: dict[int, float]) -> tuple[float, int] | None:
    """The slowest step after the first against the median of the steps that did like work
    (their longest completion within a quarter of its own; five at least), and its number.

    A step's sampling and update both scale with its longest completion (TRL pads a step's
    completions to it), and completions shrink several times as the model learns: the plain
    max/median counts that shrinking as slow steps."""
    worst = None
    for step, seconds, _ in timed[1:]:
        length = longest.get(step)
        if not length:
            continue
        peers = [s for k, s, _ in timed[1:] if abs(longest.get(k, 0) - length) <= length / 4]
        if len(peers) >= 5:
            ratio = seconds / statistics.median(peers)
            if worst is None or ratio > worst[0]:
                worst = (round(ratio, 2), step)
    return worst


def phases(series: Series, steps: list[int]) -> list[dict]:
    """Where each of ``steps`` spent its time: sampling, scoring and the rest of TRL's
    ``training_step`` (the update's forwards and backward), with its longest completion."""
    by_step = {
        name: {step: v for step, v, _ in series.get(name, [])}
        for name in (
            metric_names.STEP_TIME,
            metric_names.GENERATION_TIME,
            metric_names.REWARD_TIME,
            metric_names.COMPLETION_MAX_LENGTH,
            metric_names.UPDATE_WIDTH,
        )
    }
    rows = []
    for step in steps:
        total = by_step[metric_names.STEP_TIME].get(step)
        sampling = by_step[metric_names.GENERATION_TIME].get(step)
        scoring = by_step[metric_names.REWARD_TIME].get(step)
        row = {"step": step, "s": total, "generation_s": sampling, "reward_s": scoring}
        if None not in (total, sampling, scoring):
            row["update_s"] = total - sampling - scoring
        row["longest"] = by_step[metric_names.COMPLETION_MAX_LENGTH].get(step)
        row["width"] = by_step[metric_names.UPDATE_WIDTH].get(step)
        rows.append({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})
    return rows


def new_width_costs(series: Series, steps: list[int], top: int = 3) -> list[tuple]:
    """The update widths whose first visit (after the first step) cost the most over their
    later visits: (step, width, extra update seconds), the dearest first.

    A width is a step's prompt plus completion tokens as the update pads them; a kernel or plan
    built for a new width shows here, where a step's plain time mixes it with the work."""
    rows = [r for r in phases(series, steps) if r.get("update_s") is not None and r["width"]]
    visits: dict[float, list[dict]] = {}
    for row in rows:
        visits.setdefault(row["width"], []).append(row)
    costs = [
        (
            first["step"],
            int(width),
            round(first["update_s"] - statistics.median(r["update_s"] for r in later), 3),
        )
        for width, (first, *later) in visits.items()
        if later
    ]
    return sorted(costs, key=lambda cost: -cost[2])[:top]


def wall_gaps(timed: list[tuple]) -> list[float]:
    """Wall-clock seconds between consecutive records after the first step's: what a user
    waits, with what ``training_step`` leaves out (the optimizer step, callbacks, storing
    samples) and any evaluation in between."""
    return [b[2] - a[2] for a, b in itertools.pairwise(timed[1:])]


def picked_micro_batch(config: RunConfig, prompt_tokens: int) -> int | None:
    """The micro-batch the worker runs: the config's, else the one it picks for this card
    from the same estimate and prompt length (engine/run/worker.py)."""
    from engine.planning.micro_batch import local_card_bytes, with_default_micro_batch

    card = local_card_bytes()
    if card is not None:
        config = with_default_micro_batch(config, card, prompt_tokens)
    return config.training.micro_batch_size


def estimate_gib(config: RunConfig, micro_batch: int | None, prompt_tokens: int) -> float | None:
    from engine.models.shape import model_shape
    from engine.planning.memory import GIB, estimate

    shape = model_shape(config.model)
    if shape is None or micro_batch is None:
        return None
    return round(
        estimate(config, shape, micro_batch=micro_batch, prompt_tokens=prompt_tokens).peak / GIB, 2
    )


def prompt_tokens(config: RunConfig) -> int:
    from engine.data.datasets import load_rows
    from engine.models.loading import load_tokenizer
    from engine.planning.micro_batch import longest_prompt

    return longest_prompt(load_tokenizer(config.model), load_rows(config.data))


def learning_curve(args: argparse.Namespace) -> dict:
    config = configured(
        args,
        steps=100_000,
        time_budget_minutes=args.minutes,
        eval_steps=args.eval_every,
        eval_samples=args.eval_samples,
    )
    print(config.to_yaml())
    with tempfile.TemporaryDirectory(prefix="studio-real-") as tmp:
        # --keep: the run's folder (its train.log grows as it trains) outlives a cut-off call
        data_dir = args.keep or Path(tmp)
        if launch(config, data_dir).wait() != 0:
            log = (data_dir / "train.log").read_text(errors="replace")
            raise SystemExit(f"the run failed:\n{log[-4000:]}")
        run, series = collect(data_dir)
        log_tail = (data_dir / "train.log").read_text(errors="replace")[-1500:]
    print(log_tail)
    result = summarise(run, series, EVAL_NAMES)
    evals = series.get(metric_names.EVAL_ACCURACY, [])
    start = evals[0][2] if evals else 0.0
    peaks = [v for _, v, _ in series.get(metric_names.PEAK_MEMORY, [])]
    lengths = [v for _, v, _ in series.get(metric_names.COMPLETION_MEAN_LENGTH, [])]
    tokens = prompt_tokens(config)
    micro = picked_micro_batch(config, tokens)
    figures = {
        "card": card_name(),
        "commit": commit(),
        "model": args.model,
        "algorithm": args.algorithm,
        "budget_minutes": args.minutes,
        "steps": result["steps"],
        "seconds_per_step": result["seconds_per_step"],
        "steps_per_s": round(1 / result["seconds_per_step"], 3)
        if result["seconds_per_step"]
        else None,
        "micro_batch": micro,
        "peak_gib": round(max(peaks), 2) if peaks else None,
        "estimate_gib": estimate_gib(config, micro, tokens),
        "prompt_tokens": tokens,
        "mean_completion_tokens_last": round(lengths[-1], 1) if lengths else None,
    }
    for key in EVAL_NAMES:
        figures[f"{key}_before"] = result[f"{key}_before"]
        figures[f"{key}_after"] = result[f"{key}_after"]
    for key, name in EVAL_NAMES.items():
        print(f"{key} (minutes, value): {curve(series, name, start)}")
    print(f"reward per 10 steps: {result['reward_curve']}")
    timed = series.get(metric_names.STEP_TIME, [])
    figures["first_step_s"] = round(timed[0][1], 2) if timed else None
    step_times = [v for _, v, _ in timed][1:]
    if step_times:  # the first step compiles; is any later one slow?
        figures["max_step_over_median"] = round(max(step_times) / statistics.median(step_times), 2)
        slowest = sorted(timed[1:], key=lambda point: -point[1])
        figures["slowest_steps_s"] = [(step, round(v, 2)) for step, v, _ in slowest[:3]]
        longest = {step: v for step, v, _ in series.get(metric_names.COMPLETION_MAX_LENGTH, [])}
        like = over_like_work(timed, longest) or (None, None)
        figures["max_step_over_like_work_median"], figures["slowest_like_work_step"] = like
        figures["slowest_steps_phases"] = phases(series, [step for step, _, _ in slowest[:5]])
        figures["new_width_costs"] = new_width_costs(series, [step for step, _, _ in timed[1:]])
        gaps = wall_gaps(timed)
        if gaps:
            figures["max_wall_step_over_median"] = round(max(gaps) / statistics.median(gaps), 2)
    peak_steps = series.get(metric_names.PEAK_MEMORY, [])
    if peak_steps:  # when the peak was reached: after which step (evaluations run between steps)
        top = max(v for _, v, _ in peak_steps)
        figures["peak_first_step"] = next(step for step, v, _ in peak_steps if v == top)
        figures["peak_gib_step_1"] = round(peak_steps[0][1], 2)
    figures["accuracy_curve"] = curve(series, metric_names.EVAL_ACCURACY, start)
    figures["format_curve"] = curve(series, metric_names.EVAL_FORMAT_RATE, start)
    reached = [m for m, v in figures["accuracy_curve"] if v >= 0.4]
    figures["minutes_to_40pct"] = reached[0] if reached else None
    return figures


def memory_points(args: argparse.Namespace) -> dict:
    figures: dict = {"card": card_name(), "commit": commit(), "model": args.model}
    for micro in (int(m) for m in args.memory_points.split(",")):
        config = configured(
            args,
            {"max_completion_length": args.tokens, "num_generations": 8},
            steps=args.steps,
            micro_batch_size=micro,
            eval_samples=0,
            prompts_per_step=32,
        )
        with tempfile.TemporaryDirectory(prefix="studio-mem-") as tmp:
            _, series = train_via_cli(config, Path(tmp))
        peak = max(v for _, v, _ in series[metric_names.PEAK_MEMORY])
        times = [v for _, v, _ in series.get(metric_names.STEP_TIME, [])][1:]
        lengths = [v for _, v, _ in series.get(metric_names.COMPLETION_MEAN_LENGTH, [])]
        clipped = [v for _, v, _ in series.get(metric_names.COMPLETION_CLIPPED_RATIO, [])]
        tokens = prompt_tokens(config)
        point = {
            "peak_gib": round(peak, 2),
            "estimate_gib": estimate_gib(config, micro, tokens),
            "prompt_tokens": tokens,
            "seconds_per_step": round(statistics.median(times), 3) if times else None,
            "mean_completion_tokens": round(statistics.fmean(lengths), 1) if lengths else None,
            "clipped_ratio": round(statistics.fmean(clipped), 3) if clipped else None,
        }
        print(f"micro-batch {micro}: {point}")
        figures.update({f"mb{micro}_{k}": v for k, v in point.items()})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=ENGLISH_MODEL_ALIAS)
    parser.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    parser.add_argument("--algorithm", choices=ALGORITHMS, default="grpo")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--eval-every", type=int, default=10, help="steps between evaluations")
    parser.add_argument("--eval-samples", type=int, default=200)
    parser.add_argument("--memory-points", default="", help="micro-batches to measure peaks at")
    parser.add_argument("--tokens", type=int, default=256, help="new tokens (memory points)")
    parser.add_argument("--steps", type=int, default=3, help="steps per memory point")
    parser.add_argument("--override", default="{}", help="JSON merged into the config sections")
    parser.add_argument("--keep", type=Path, default=None, help="train in this data dir, kept")
    args = parser.parse_args()
    figures = memory_points(args) if args.memory_points else learning_curve(args)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
