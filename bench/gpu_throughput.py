"""GPU throughput of a training step: bare TRL, our worker with transformers' generate, our worker
with the static-cache sampler, GRPO and PPO, on one card in one invocation.

The model is a random-init Qwen2 with Qwen2.5-0.5B's shape (hidden 896, 24 layers, 14 heads, 2
key/value heads, MLP 4864, vocabulary 151,936, tied embeddings) in bf16, with a word-level
tokenizer and chat template built here; its completions never stop early, so every step
generates ``prompts x generations x tokens`` tokens. Prompts are word problems from a JSONL file.

Variants (each in its own process, so memory peaks and CUDA graphs do not mix):

- ``anchor``: a bare TRL ``GRPOTrainer`` built from ``build_trl_args`` + ``to_trl`` (HF generate);
- ``grpo_hf``, ``grpo_compiled``: ``python -m engine train``, GRPO, ``generation.backend`` hf /
  compiled;
- ``ppo_compiled``: ``python -m engine train``, PPO with the compiled backend;
- ``ppo_default``: the same with the config's default micro-batch instead of ``--micro-batch``;
- ``grpo_async``, ``rloo_compiled``, ``rloo_async``: GRPO and RLOO with the compiled backend
  and ``training.rollout`` async (the next step sampled while this one updates) or sync. The
  report compares each async variant with its sync one: samples per second, and its step time
  against the longer of the sync step's generation and the rest of it (``*_vs_bound_ratio``).

The first step of each (graph capture, allocator warm-up) is left out of the medians. Each
variant also reports the micro-batch it ran (``--micro-batch 0``: the one the worker picks from
the peak-memory estimate for this card) and the estimated peak, beside the measured one.

    python bench/gpu_throughput.py --steps 6
    python bench/gpu_throughput.py --steps 5 --micro-batch 0 --variants grpo_compiled,ppo_compiled
    python bench/gpu_throughput.py --steps 8 --micro-batch 0 \
        --variants anchor,grpo_compiled,grpo_async,rloo_compiled,rloo_async
    python bench/gpu_throughput.py --gpus 2 --variants grpo_compiled,ppo_compiled
    python bench/gpu_throughput.py --layers 2 --steps 3 --prompts 4 --tokens 32  # smoke
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from qwen_model import build_qwen_05b
from studio_run import run_script, train_via_cli

from engine.config.run_config import RunConfig
from engine.tracking import metric_names

logger = logging.getLogger("gpu_throughput")

VARIANTS = (
    "anchor", "grpo_hf", "grpo_compiled", "grpo_async", "rloo_compiled", "rloo_async",
    "ppo_compiled", "ppo_default",
)  # fmt: skip
# Each async variant and the sync one it is measured against.
ASYNC_PAIRS = {"grpo_async": "grpo_compiled", "rloo_async": "rloo_compiled"}
NAMES = ["Tom", "Ana", "Li", "Sam", "Maya", "Omar", "Eva", "Raj"]
THINGS = ["apples", "books", "coins", "marbles", "stamps", "pencils"]

ANCHOR_SCRIPT = """
import json, sys, time
import torch
from datasets import Dataset
from transformers import TrainerCallback
from engine.config.run_config import RunConfig
from engine.data.datasets import load_rows
from engine.models.loading import load_model_and_tokenizer
from engine.trainers.trl.build import build_trl_args
from rewards.trl_adapter import to_trl
from trl import GRPOTrainer

config = RunConfig.load(sys.argv[1])
model, tokenizer = load_model_and_tokenizer(config.model)
funcs, _ = to_trl(config.reward)
ends, generation_s = [], []

class TimedGeneration(GRPOTrainer):  # bare TRL; only the generation call is timed
    def _generate_single_turn(self, *args, **kwargs):
        started = time.perf_counter()
        out = super()._generate_single_turn(*args, **kwargs)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        generation_s.append(time.perf_counter() - started)
        return out

class StepClock(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        ends.append(time.perf_counter())

started = time.perf_counter()
trainer = TimedGeneration(model=model, reward_funcs=funcs,
                          args=build_trl_args(config, sys.argv[2]),
                          train_dataset=Dataset.from_list(load_rows(config.data)),
                          processing_class=tokenizer, callbacks=[StepClock()])
trainer.train()
lengths = [log["completions/mean_length"] for log in trainer.state.log_history
           if "completions/mean_length" in log]
print(json.dumps({"step_s": [b - a for a, b in zip([started] + ends, ends)],
                  "generation_s": generation_s, "mean_length": lengths,
                  "peak_gib": torch.cuda.max_memory_allocated() / 2**30
                              if torch.cuda.is_available() else float("nan")}))
"""


def build_model(folder: Path, layers: int) -> None:
    """The 0.5B-shaped model, its tokenizer knowing the task's words, into ``folder``."""
    build_qwen_05b(folder, layers, [*NAMES, *THINGS, *_filler_words()])


FILLER = "has buys more gives away how many does now have left each of the a and to in total"


def _filler_words() -> list[str]:
    return [*FILLER.split(), "bags", "with", "then", "friends", "?", ".", ","]


def write_problems(path: Path, rows: int) -> None:
    rng = random.Random(0)
    with path.open("w") as f:
        for _ in range(rows):
            name, thing = rng.choice(NAMES), rng.choice(THINGS)
            a, b, c = rng.randint(2, 90), rng.randint(2, 90), rng.randint(2, 9)
            prompt = (
                f"{name} has {a} bags with {c} {thing} each and buys {b} more {thing} . "
                f"{name} then gives away {c} {thing} to each of {c} friends . "
                f"How many {thing} does {name} have now ?"
            )
            f.write(json.dumps({"prompt": prompt, "answer": str(a * c + b - c * c)}) + "\n")


def run_config(variant: str, args: argparse.Namespace, model_dir: Path, data: Path) -> RunConfig:
    algorithm = next((a for a in ("ppo", "rloo") if variant.startswith(a)), "grpo")
    backend = "hf" if variant in ("anchor", "grpo_hf") else "compiled"
    training = {
        "rollout": "async" if variant.endswith("_async") else "sync",
        "steps": args.steps,
        "prompts_per_step": args.prompts,
        "eval_samples": 0,
        "save_steps": 0,
        "logging_steps": 1,
        "samples_per_log": 0,
    }
    if args.gpus > 1:  # one process per GPU, each sampling and training its share of the step
        training["num_gpus"] = args.gpus
    if args.micro_batch and variant != "ppo_default":
        training["micro_batch_size"] = args.micro_batch
    return RunConfig.from_dict(
        {
            "name": f"bench-{variant}",
            "algorithm": algorithm,
            "model": {"name_or_path": str(model_dir)},
            "data": {"source": "file", "path": str(data), "split": "all"},
            "generation": {
                "num_generations": args.generations,
                "max_completion_length": args.tokens,
                "backend": backend,
            },
            "training": training,
        }
    )


def measure(variant: str, config: RunConfig, work: Path) -> dict[str, float]:
    """Median s/step, generation s/step, mean completion length, peak GiB and log-prob gap."""
    if variant == "anchor":
        out = run_script(ANCHOR_SCRIPT, config, work / "anchor-out")
        step_s, generation_s = out["step_s"][1:], out["generation_s"][1:]
        return {
            "step_s": statistics.median(step_s),
            "generation_s": statistics.median(generation_s),
            "mean_length": statistics.mean(out["mean_length"][1:]),
            "peak_gib": out["peak_gib"],
        }
    _, series = train_via_cli(config, work / variant)

    def values(name: str) -> list[float]:
        return [v for _, v, _ in series.get(name, [])][1:]

    stamps = [t for _, _, t in series[metric_names.REWARD_TOTAL]]
    result = {
        "step_s": statistics.median([b - a for a, b in itertools.pairwise(stamps)]),
        "generation_s": statistics.median(values(metric_names.GENERATION_TIME)),
        "mean_length": statistics.mean(values(metric_names.COMPLETION_MEAN_LENGTH)),
        "peak_gib": max(values(metric_names.PEAK_MEMORY) or [float("nan")]),
    }
    # The estimate the worker ran with: its micro-batch picked at the run's real prompt length.
    for key, name in (
        ("estimate_gib", metric_names.ESTIMATED_PEAK),
        ("micro_batch", metric_names.MICRO_BATCH),
    ):
        if name in series:
            result[key] = series[name][0][1]
    for key, name in (
        ("logprob_gap", metric_names.GEN_LOGPROB_GAP),
        ("overlap_share", metric_names.OVERLAP_SHARE),
        ("is_ratio_mean", metric_names.GEN_IS_RATIO_MEAN),
        ("is_clipped_share", metric_names.GEN_IS_CLIPPED_SHARE),
    ):
        if values(name):
            result[key] = statistics.mean(values(name))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument(
        "--micro-batch", type=int, default=64, help="0 = the config's default micro-batch"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--gpus", type=int, default=1, help="training.num_gpus of each run")
    parser.add_argument("--log-dir", type=Path, default=None, help="keep each run's log here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    import torch

    card = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="studio-gpu-bench-") as tmp:
        work = Path(tmp)
        model_dir, data = work / "qwen2-0.5b-shape", work / "problems.jsonl"
        build_model(model_dir, args.layers)
        write_problems(data, 4 * args.prompts)
        for variant in args.variants.split(","):
            config = run_config(variant, args, model_dir, data)
            started = time.perf_counter()
            try:
                results[variant] = measure(variant, config, work)
            except Exception as exc:  # one variant's failure (an OOM) is a result too
                logger.error("%s failed: %s", variant, str(exc)[-2000:])
                results[variant] = {"error": str(exc).strip().splitlines()[-1][:300]}
            finally:
                if args.log_dir is not None and (work / variant).exists():
                    args.log_dir.mkdir(parents=True, exist_ok=True)
                    for log in (work / variant).glob("train.log"):
                        (args.log_dir / f"{variant}.log").write_bytes(log.read_bytes())
            logger.info("%s: %s (%.0f s)", variant, results[variant], time.perf_counter() - started)

    report: dict[str, float | str] = {"card": card, "gpus": args.gpus, "steps": args.steps}
    anchor_tps = None
    for variant, r in results.items():
        if "error" in r:
            report[f"{variant}_error"] = r["error"]
            continue
        tokens = r["mean_length"] * args.prompts * args.generations
        tps = tokens / r["step_s"]
        anchor_tps = tps if variant == "anchor" else anchor_tps
        report[f"{variant}_step_s"] = round(r["step_s"], 3)
        report[f"{variant}_tokens_per_s"] = round(tps)
        report[f"{variant}_generation_tokens_per_s"] = round(tokens / r["generation_s"])
        report[f"{variant}_generation_share"] = round(r["generation_s"] / r["step_s"], 3)
        if r["peak_gib"] == r["peak_gib"]:  # not NaN (on a CPU)
            report[f"{variant}_peak_gib"] = round(r["peak_gib"], 2)
        if "estimate_gib" in r:
            report[f"{variant}_micro_batch"] = int(r["micro_batch"])
            report[f"{variant}_estimate_gib"] = round(r["estimate_gib"], 2)
        if "logprob_gap" in r:
            report[f"{variant}_logprob_gap_nats"] = float(f"{r['logprob_gap']:.3g}")
        for key in ("overlap_share", "is_ratio_mean", "is_clipped_share"):
            if key in r:
                report[f"{variant}_{key}"] = round(r[key], 4)
        print(
            f"{variant:>14}: {r['step_s']:6.2f} s/step  {tps:9.0f} tok/s  "
            f"generation {r['generation_s']:6.2f} s ({r['generation_s'] / r['step_s']:.0%})  "
            f"peak {r['peak_gib']:5.1f} GiB (estimate {r.get('estimate_gib', float('nan')):5.1f}, "
            f"micro-batch {r.get('micro_batch', '?')})  "
            f"gap {r.get('logprob_gap', float('nan')):.4f}"
        )
    if anchor_tps:
        for variant in results:
            if f"{variant}_tokens_per_s" in report and variant != "anchor":
                ratio = report[f"{variant}_tokens_per_s"] / anchor_tps
                report[f"{variant}_vs_anchor_tokens_ratio"] = round(ratio, 2)
    for fast, slow in ASYNC_PAIRS.items():
        if fast in results and slow in results and f"{fast}_step_s" in report:
            report[f"{fast}_vs_sync_samples_ratio"] = round(
                results[slow]["step_s"] / results[fast]["step_s"], 3
            )
            sync = results[slow]
            bound = max(sync["generation_s"], sync["step_s"] - sync["generation_s"])
            report[f"{fast}_vs_bound_ratio"] = round(results[fast]["step_s"] / bound, 3)
    if "grpo_compiled_step_s" in report and "ppo_compiled_step_s" in report:
        ratio = report["ppo_compiled_step_s"] / report["grpo_compiled_step_s"]
        report["ppo_vs_grpo_step_ratio"] = round(ratio, 3)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
