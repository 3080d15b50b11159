"""FSDP on two GPUs: a full fine-tune that does not fit one card under DDP trains sharded.

Builds a random-init Qwen2 (``--model-shape large``: Qwen2.5-7B's shape with 32 layers, 8.5B
parameters, whose full fine-tune the peak-memory estimate of engine/planning/memory.py puts above a
whole 80 GB card under DDP even one completion at a time; ``small``: Qwen2.5-0.5B's; ``tiny``:
a CPU smoke shape) on the GPU in bfloat16 with a word-level tokenizer (bench/qwen_model.py),
saved as safetensors to a local folder, in a child process so this one never holds GPU memory.
Then it trains GRPO through the product's CLI, ``python -m engine train`` with
``training.num_gpus: 2``, LoRA off, ``--steps`` steps of ``--prompts`` prompts x
``--generations`` completions x ``--tokens`` new tokens: ``distributed: fsdp`` for ``large``;
fsdp then ddp for ``small``.

For each run it prints s/step (median gap between the steps' metric timestamps, the first step
left out when there are three or more), the peak GiB of the main process's GPU
(``perf/peak_memory_gib``), the most memory nvidia-smi saw in use on each GPU, and whether
metrics and samples were written once: in the run's SQLite file, no (name, step) metric twice
and at most ``samples_per_log`` samples a step. It also prints the estimate's verdict (peak at
the smallest micro-batch against 80% of the card) for DDP and for FSDP, on this card and on an
80 GiB one. Each run has a wall-clock limit (``--run-timeout``): on expiry its process group is
ended and the report says so. Ends with one JSON line.

    python bench/fsdp_check.py                      # 8.5B shape, FSDP, 2 GPUs (~5 minutes)
    python bench/fsdp_check.py --model-shape small  # 0.5B shape, FSDP and DDP, for comparison
    python bench/fsdp_check.py --model-shape tiny --dry-run  # CPU: build, configs, verdicts
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_throughput import write_problems  # noqa: E402
from qwen_model import QWEN_05B, build_qwen  # noqa: E402

from engine.config.run_config import RunConfig  # noqa: E402
from engine.models.shape import model_shape  # noqa: E402
from engine.planning.memory import CARD_BUDGET, GIB, estimate  # noqa: E402
from engine.planning.micro_batch import fitting_micro_batch  # noqa: E402
from engine.tracking import metric_names  # noqa: E402

logger = logging.getLogger("fsdp_check")

# Qwen2.5-7B's config.json (untied embeddings) with 32 layers instead of 28: 8.5B parameters, so
# that under DDP even the estimate's smallest step (weights, gradients, AdamW moments and DDP's
# gradient buckets: 10 bytes a parameter) is above the whole of an 80 GB card, not only above
# the 80% the estimate fills.
QWEN_7B = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 32,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
}
TINY = {
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
}
SHAPES = {"large": QWEN_7B, "small": QWEN_05B, "tiny": TINY}
# The strategies each shape trains with: the large one only sharded (DDP is what does not fit).
STRATEGIES = {"large": ("fsdp",), "small": ("fsdp", "ddp"), "tiny": ("fsdp", "ddp")}
SAMPLES_PER_LOG = 8
POLL_S = 2.0  # how often nvidia-smi is read while a run trains
CARD_BYTES = 80 * 1024**3  # an 80 GiB card, where nvidia-smi cannot say


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-shape", choices=sorted(SHAPES), default="large")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--run-timeout", type=float, default=330.0, help="seconds per training run")
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a temporary one")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="build the model and write the configs and launch files, train nothing",
    )
    parser.add_argument("--build-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("steps", "prompts", "generations", "tokens", "gpus"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: must be >= 1")
    if args.generations < 2:
        parser.error("--generations: GRPO needs at least 2 completions per prompt")
    if args.gpus < 2:
        parser.error("--gpus: FSDP shards over 2 or more GPUs")
    return args


def problem_words(data: Path) -> list[str]:
    """The words of the problems file, for the tokenizer's vocabulary."""
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    return sorted({w for row in rows for w in row["prompt"].split()})


def built_model_grpo(
    name: str,
    args: argparse.Namespace,
    model_dir: Path,
    data: Path,
    lora: dict[str, Any] | None = None,
    **training: Any,
) -> RunConfig:
    """GRPO on a built model over the problems file: ``args.steps`` steps of ``args.prompts``
    prompts x ``args.generations`` completions x ``args.tokens`` new tokens, every step logged,
    no evaluation or checkpoints; ``training`` adds to that section (the benches share it)."""
    return RunConfig.from_dict(
        {
            "name": name,
            "algorithm": "grpo",
            "model": {"name_or_path": str(model_dir), "lora": lora},
            "data": {"source": "file", "path": str(data), "split": "all"},
            "generation": {
                "num_generations": args.generations,
                "max_completion_length": args.tokens,
            },
            "training": {
                "steps": args.steps,
                "prompts_per_step": args.prompts,
                "eval_samples": 0,
                "save_steps": 0,
                "logging_steps": 1,
                **training,
            },
        }
    )


def run_config(args: argparse.Namespace, model_dir: Path, data: Path, strategy: str) -> RunConfig:
    """GRPO on the built model, full fine-tune, ``args.gpus`` processes under ``strategy``."""
    return built_model_grpo(
        f"fsdp-check-{args.model_shape}-{strategy}",
        args,
        model_dir,
        data,
        num_gpus=args.gpus,
        distributed=strategy,
        samples_per_log=SAMPLES_PER_LOG,
    )


def card_bytes() -> int:
    """The first GPU's memory as nvidia-smi reports it, else an 80 GiB card's."""
    from engine.runtime.devices import list_gpus

    gpus = list_gpus()
    return gpus[0].total_bytes if gpus else CARD_BYTES


def verdict(config: RunConfig, card: int) -> dict[str, Any]:
    """Whether the estimate fits the run on ``card`` at its smallest micro-batch, and the
    micro-batch it would pick."""
    shape = model_shape(config.model)
    smallest = estimate(config, shape, micro_batch=1)
    picked = fitting_micro_batch(config, shape, CARD_BUDGET * card)
    at_picked = estimate(config, shape, micro_batch=picked)
    return {
        "fits": smallest.peak <= CARD_BUDGET * card,
        "estimate_gib_micro_batch_1": round(smallest.peak / GIB, 1),
        "micro_batch": picked,
        "estimate_gib": round(at_picked.peak / GIB, 1),
        "budget_gib": round(CARD_BUDGET * card / GIB, 1),
        "biggest": smallest.biggest,
    }


def launch_files(config: RunConfig, work: Path) -> dict[str, Any]:
    """The worker command and FSDP file the launcher writes for ``config`` (nothing runs)."""
    from engine.run.launcher import run_command
    from engine.runtime.layout import FSDP_CONFIG_FILE

    run_dir = work / f"launch-{config.training.distributed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    command = run_command(config, run_dir, "dry-run", work / "data")
    fsdp_file = run_dir / FSDP_CONFIG_FILE
    return {
        "command": command,
        "fsdp_config": fsdp_file.read_text() if fsdp_file.exists() else None,
    }


def build(folder: Path, shape_name: str, words: list[str]) -> int:
    """Build the model in a child process (this one keeps no GPU memory); its parameters."""
    done = subprocess.run(
        [sys.executable, __file__, "--build-only", str(folder), "--model-shape", shape_name],
        cwd=ROOT,
        input=json.dumps(words),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"building the model failed:\n{done.stderr[-3000:]}")
    return int(done.stdout.strip().splitlines()[-1])


def train(config: RunConfig, data_dir: Path, timeout: float) -> dict[str, Any]:
    """Run ``python -m engine train`` in its own process group; its status, wall time and the
    most memory nvidia-smi saw in use on each GPU meanwhile."""
    from engine.runtime.devices import list_gpus

    data_dir.mkdir(parents=True, exist_ok=True)
    path = config.save(data_dir / "config.yaml")
    log = data_dir / "train.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    started = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "train", str(path), "--data-dir", str(data_dir)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its accelerate processes share its group: ended together
        )
        used: dict[int, int] = {}
        code: int | str | None = None
        while code is None:
            for gpu in list_gpus():  # every GPU's, not only the main process's
                used[gpu.index] = max(used.get(gpu.index, 0), gpu.total_bytes - gpu.free_bytes)
            left = timeout - (time.perf_counter() - started)
            try:
                code = proc.wait(timeout=max(0.0, min(POLL_S, left)))
            except subprocess.TimeoutExpired:
                if time.perf_counter() - started >= timeout:
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                    code = "timeout"
    result: dict[str, Any] = {
        "exit": code,
        "pid": proc.pid,  # also its process group's id
        "wall_s": round(time.perf_counter() - started, 1),
        # nvidia-smi's memory in use: CUDA contexts and the allocator's cache included
        "max_used_gib_per_gpu": {i: round(b / GIB, 1) for i, b in sorted(used.items())},
    }
    if code != 0:
        result["log_tail"] = log.read_text(errors="replace")[-2500:]
    return result


def read_back(data_dir: Path) -> dict[str, Any]:
    """What the run's SQLite file holds: status, s/step, peak memory, duplicate rows."""
    from storage.paths import db_path

    db = db_path(data_dir)
    if not db.exists():
        return {"status": "no database"}
    con = sqlite3.connect(db)
    try:
        run_id, status, error = con.execute(
            "SELECT id, status, error_message FROM run ORDER BY created_at DESC LIMIT 1"
        ).fetchone()
        rows = con.execute(
            "SELECT name, step, value, time FROM metric WHERE run_id = ? ORDER BY id", (run_id,)
        ).fetchall()
        duplicates = con.execute(
            "SELECT COUNT(*) FROM (SELECT name, step FROM metric WHERE run_id = ? "
            "GROUP BY name, step HAVING COUNT(*) > 1)",
            (run_id,),
        ).fetchone()[0]
        samples = dict(
            con.execute(
                "SELECT step, COUNT(*) FROM sample WHERE run_id = ? GROUP BY step", (run_id,)
            ).fetchall()
        )
    finally:
        con.close()
    stamps = sorted(t for name, _, _, t in rows if name == metric_names.REWARD_TOTAL)
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    gaps = gaps[1:] if len(gaps) >= 2 else gaps  # the first step compiles and warms up

    def values(name: str) -> list[float]:
        return [v for n, _, v, _ in rows if n == name and v is not None]

    peaks = values(metric_names.PEAK_MEMORY)
    step_times = values(metric_names.STEP_TIME)
    return {
        "status": status,
        "error": error,
        "steps_recorded": len(stamps),
        "s_per_step": round(statistics.median(gaps), 2) if gaps else None,
        "trainer_step_time_s": round(statistics.median(step_times), 2) if step_times else None,
        "peak_gib_main_gpu": round(max(peaks), 2) if peaks else None,
        "metric_rows": len(rows),
        "duplicate_metric_rows": duplicates,
        "samples_per_step": samples,
        "written_once": duplicates == 0
        and bool(samples)
        and max(samples.values()) <= SAMPLES_PER_LOG,
    }


def build_only(folder: Path, shape_name: str) -> None:
    """The child process of :func:`build`: words on stdin, parameter count on stdout."""
    words = json.loads(sys.stdin.read())
    print(build_qwen(folder, words, SHAPES[shape_name], init_in_bf16=True))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.build_only is not None:
        build_only(args.build_only, args.model_shape)
        return {}
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="fsdp-check-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        data, model_dir = work / "problems.jsonl", work / f"qwen2-{args.model_shape}"
        write_problems(data, 4 * args.prompts)
        card = card_bytes()
        started = time.perf_counter()
        parameters = build(model_dir, args.model_shape, problem_words(data))
        report: dict[str, Any] = {
            "model_shape": args.model_shape,
            "parameters": parameters,
            "build_s": round(time.perf_counter() - started, 1),
            "card_gib": round(card / GIB, 1),
            "gpus": args.gpus,
            "completions_per_step": args.prompts * args.generations,
            "new_tokens": args.tokens,
        }
        logger.info("built %s: %.2fB parameters", model_dir.name, parameters / 1e9)
        for strategy in ("ddp", "fsdp"):
            config = run_config(args, model_dir, data, strategy)
            report[f"verdict_{strategy}"] = verdict(config, card)
            # the check's premise is an 80 GB card: on a bigger one, say what it would be there
            report[f"verdict_{strategy}_80gib"] = verdict(config, CARD_BYTES)
            logger.info("estimate under %s: %s", strategy, report[f"verdict_{strategy}"])
        for strategy in STRATEGIES[args.model_shape]:
            config = run_config(args, model_dir, data, strategy)
            if args.dry_run:
                report[f"launch_{strategy}"] = launch_files(config, work)
                continue
            logger.info("training %s on %d GPUs", strategy, args.gpus)
            run_dir = work / f"run-{strategy}"
            result = train(config, run_dir, args.run_timeout)
            result.update(read_back(run_dir))
            report[strategy] = result
            logger.info("%s: %s", strategy, {k: v for k, v in result.items() if k != "log_tail"})
        if "fsdp" in report and "ddp" in report:
            fsdp, ddp = report["fsdp"].get("s_per_step"), report["ddp"].get("s_per_step")
            if fsdp and ddp:
                report["fsdp_over_ddp_step"] = round(fsdp / ddp, 2)
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
