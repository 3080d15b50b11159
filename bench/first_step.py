"""The first step of a run, cold and with the compile cache the runs before it left.

Builds a random-init Qwen2 (``--model-shape large``: issue 22's 8.5B 7B-shape, ``small``: the
0.5B shape, ``tiny``: a CPU smoke shape; bench/fsdp_check.py builds it in a child process), then
trains the same GRPO config twice through ``python -m engine train`` in ONE data dir: LoRA r16,
``--prompts`` x ``--generations`` completions x ``--tokens`` new tokens, the micro-batch the
worker picks from the memory estimate, no evaluation or checkpoints. The first run compiles
into ``<data dir>/compile_cache`` (engine/runtime/compile_cache.py), the second reads it.

Per run: the first step's seconds (TRL's ``perf/step_time``), the median of the others, the
slowest of the others over that median, the peak GiB, the run's wall time (model load included),
and its final model: MB on disk, its files, and the seconds from the ``saving_final`` phase to the
run's end (issue 42: a LoRA run writes its adapter, where it used to merge a copy of the model and
write 17 GB of full weights). Ends with one JSON line.

How a big run starts fast: it compiles less. The sampler's decode step compiles one decoder
block and runs it for every block (``STUDIO_DECODE_COMPILE=layer``, engine/generation/
token_step.py), where it compiled the whole decode with its 32 blocks unrolled: 50 s of the
8.5B shape's 85 s cold first step. On one H200 the cold first step fell to 41.5 s and the warm
one to 15.3 s (from 85.4 and 29.6), later steps unchanged (5.0 s); the 0.5B decode step costs
2.2 ms against 2.1 (the residual add and the next block's norm no longer fuse). Starting on the
eager path while compiling in the background would hide the compile but run the first steps
several times slower and keep two code paths; compiling one block removes the work instead.
``STUDIO_DECODE_COMPILE=step`` runs the old way, to compare.

    python bench/first_step.py                       # 8.5B shape on one GPU (~7 minutes)
    python bench/first_step.py --model-shape small --steps 4
    python bench/first_step.py --model-shape tiny --tokens 8 --prompts 2 --steps 2   # CPU smoke
    python bench/first_step.py --work-dir /tmp/fs --runs 1   # one call builds and runs cold,
    python bench/first_step.py --work-dir /tmp/fs --runs 1   # the next (same machine) warm
    python bench/first_step.py --work-dir /tmp/fs --runs 1 --load-in-4bit   # QLoRA
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fsdp_check import SHAPES, build, built_model_grpo, problem_words, read_back, train
from gpu_throughput import write_problems
from studio_run import collect

from engine.config.run_config import RunConfig
from engine.tracking import metric_names


def run_config(args: argparse.Namespace, model_dir: Path, data: Path) -> RunConfig:
    """GRPO with LoRA on the built model, one GPU, the micro-batch left to the estimate; with
    ``--load-in-4bit`` over NF4 weights (QLoRA)."""
    lora = {"r": args.lora, "alpha": 32}
    config = built_model_grpo(f"first-step-{args.model_shape}", args, model_dir, data, lora)
    if not args.load_in_4bit:
        return config
    as_dict = config.to_dict()
    as_dict["model"]["load_in_4bit"] = True
    return RunConfig.from_dict(as_dict)


def step_figures(data_dir: Path) -> dict[str, Any]:
    """The newest run's first step, the median of the rest and its slowest over that median;
    the peak GiB after each step's loss (``perf/peak_memory_gib``) and the estimate the worker
    picked the micro-batch with (``perf/estimated_peak_gib``, ``perf/micro_batch``)."""
    _, series = collect(data_dir)

    def values(name: str) -> list[float]:
        return [v for _, v, _ in series.get(name, [])]

    times = values(metric_names.STEP_TIME)
    rest = times[1:]
    median = statistics.median(rest) if rest else None
    estimated, micro = values(metric_names.ESTIMATED_PEAK), values(metric_names.MICRO_BATCH)
    return {
        "first_step_s": round(times[0], 1) if times else None,
        "median_step_s": round(median, 2) if median else None,
        "max_step_over_median": round(max(rest) / median, 2) if median else None,
        "step_times_s": [round(t, 2) for t in times],
        "peak_gib_by_step": [round(v, 2) for v in values(metric_names.PEAK_MEMORY)],
        "estimated_peak_gib": round(estimated[0], 2) if estimated else None,
        "micro_batch": int(micro[0]) if micro else None,
    }


def final_figures(data_dir: Path) -> dict[str, Any]:
    """The newest run's final model: MB on disk, its files, and the seconds it took to save
    (from the ``saving_final`` phase to the run's end)."""
    import sqlite3

    from engine.runtime.layout import final_model_dir, run_dir
    from storage.paths import db_path

    con = sqlite3.connect(db_path(data_dir))
    try:
        run_id, ended = con.execute(
            "SELECT id, ended_at FROM run ORDER BY created_at DESC LIMIT 1"
        ).fetchone()
        saving = con.execute(
            "SELECT MAX(time) FROM run_phase WHERE run_id = ? AND phase = 'saving_final'",
            (run_id,),
        ).fetchone()[0]
    finally:
        con.close()
    final = final_model_dir(run_dir(data_dir, run_id))
    files = sorted(p for p in final.rglob("*") if p.is_file()) if final.is_dir() else []
    return {
        "final_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1),
        "final_files": [p.name for p in files],
        "final_save_s": round(ended - saving, 2) if ended and saving else None,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-shape", choices=sorted(SHAPES), default="large")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--lora", type=int, default=16)
    parser.add_argument("--runs", type=int, default=2, help="runs in one data dir, one by one")
    parser.add_argument("--load-in-4bit", action="store_true", help="QLoRA: NF4 base weights")
    parser.add_argument("--run-timeout", type=float, default=400.0, help="seconds per run")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep the built model and the data dir here (a later call reuses both: its runs "
        "are warm); default: a temporary folder",
    )
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"model_shape": args.model_shape}
    with tempfile.TemporaryDirectory(prefix="studio-first-step-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        data = work / "problems.jsonl"
        if not (work / "model").is_dir():  # the 8.5B shape takes minutes to build and save
            write_problems(data, 256)
            report["parameters"] = build(work / "model", args.model_shape, problem_words(data))
            print(f"built: {report['parameters']} parameters", flush=True)
        config = run_config(args, work / "model", data)
        earlier = len(list((work / "data" / "runs").glob("*")))  # runs before this call's
        for index in range(earlier, earlier + args.runs):
            ran = train(config, work / "data", args.run_timeout)
            figures = {"exit": ran["exit"], "wall_s": ran["wall_s"], **read_back(work / "data")}
            if ran["exit"] == 0:
                figures.update(step_figures(work / "data"))
                figures.update(final_figures(work / "data"))
            else:
                figures["log_tail"] = ran.get("log_tail", "")[-1500:]
            name = ("cold" if index == 0 else f"warm_{index}") + ("_4bit" * args.load_in_4bit)
            report[name] = figures
            print(f"{name}: {json.dumps(figures)}", flush=True)  # a call cut later keeps these
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
