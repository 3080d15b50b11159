"""Which settings learn in the updates a device allows? Variants x seeds of the suggested config.

Each variant is an override of the config ``export-config --model`` suggests (merged as
``bench/real_model.py --override`` merges it) and a step count: the updates the device the
settings are meant for fits in its time budget (ten CPU minutes hold 25 updates of 2 prompts x
8 completions x 64 tokens on two cores). Every (variant, seed) pair trains those steps through
``bench/real_model.py`` with held-out evaluation before and after; several run at once on each
GPU, so a GPU answers in minutes what the CPU answers in hours (its numerics are bf16, not the
CPU's float32: a guide to what to verify on the CPU, not the verification).

A few dozen updates end differently with the seed as much as with the settings, so the sweep
reports, per variant, the mean change in held-out accuracy, the seeds it rose in, and each
seed's change. A variant's ``prefill`` (e.g. ``"<think>"``) opens the assistant's reply in every
prompt of the built-in task, written to a file the run reads; ``""`` writes the same file
without it (the control: a file's held-out split is not the built-in one).

    python bench/settings_sweep.py --variants bench/variants/cpu_ten_minutes.json --seeds 0-4
    python bench/settings_sweep.py --variants FILE --only b64,b64stop --seeds 0-7 --per-gpu 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from studio_run import ROOT

from engine.config.pretrained import suggested_config
from engine.data.datasets import DataSpec, load_rows

FIGURES = ("steps", "accuracy_before", "accuracy_after", "format_rate_after")


def seeds(text: str) -> list[int]:
    """``"0-4"`` or ``"0,2,5"``."""
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def task_file(folder: Path, prefill: str) -> Path:
    """The built-in task's rows (train and held-out) as the suggestion prompts them, each
    prompt ending with an assistant message ``prefill`` when it is not empty."""
    path = folder / f"task_prefill_{prefill.encode().hex()}.jsonl"
    if path.exists():  # written once: runs already started read it
        return path
    system = suggested_config("smollm2-135m-instruct", on_gpu=False).data.system_prompt
    with path.open("w") as out:
        for split in ("train", "heldout"):
            for row in load_rows(DataSpec(source="builtin", split=split, system_prompt=system)):
                prompt = list(row["prompt"])
                if prefill:
                    prompt.append({"role": "assistant", "content": prefill})
                record = {
                    "prompt": prompt,
                    "answer": row["answer"],
                    "difficulty": row["difficulty"],
                }
                out.write(json.dumps(record) + "\n")
    return path


def override(variant: dict, seed: int, folder: Path) -> dict:
    merged = json.loads(json.dumps(variant.get("override", {})))
    merged.setdefault("training", {}).update(steps=variant["steps"], seed=seed)
    if "prefill" in variant:
        path = task_file(folder, variant["prefill"])
        file_data = {"source": "file", "path": str(path), "split": "train"}
        merged["data"] = {**merged.get("data", {}), **file_data, "difficulty_column": "difficulty"}
    return merged


def start(name: str, variant: dict, seed: int, gpu: int | None, args, folder: Path):
    run_dir = folder / f"{name}_seed{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)  # a run of an earlier sweep would be read back
    log = (folder / f"{name}_seed{seed}.log").open("w")
    env = dict(os.environ)
    if gpu is not None:  # the sweep's own CUDA_VISIBLE_DEVICES, if set, names the cards it may use
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        env["CUDA_VISIBLE_DEVICES"] = visible[gpu] if visible != [""] else str(gpu)
    command = [
        sys.executable, "bench/real_model.py", "--device", args.settings_for,
        "--minutes", "600", "--eval-every", "100000", "--eval-samples", str(args.eval_samples),
        "--keep", str(run_dir), "--override", json.dumps(override(variant, seed, folder)),
    ]  # fmt: skip
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, name, seed, gpu, log


def result(name: str, seed: int, log_path: Path) -> dict:
    lines = [line for line in log_path.read_text(errors="replace").splitlines() if line[:1] == "{"]
    figures = json.loads(lines[-1]) if lines else {}
    return {"variant": name, "seed": seed, **{k: figures.get(k) for k in FIGURES}}


def summary(results: list[dict]) -> dict:
    figures: dict = {}
    for name in dict.fromkeys(r["variant"] for r in results):
        done = [r for r in results if r["variant"] == name and r["accuracy_after"] is not None]
        gains = [r["accuracy_after"] - r["accuracy_before"] for r in done]
        if not gains:
            continue
        figures[f"{name}_accuracy_gain_mean"] = round(statistics.fmean(gains), 4)
        figures[f"{name}_seeds_up"] = sum(g > 0 for g in gains)
        figures[f"{name}_runs"] = len(gains)
        each = " ".join(f"{r['seed']}:{g:+.3f}" for r, g in zip(done, gains, strict=True))
        print(f"{name:12s} mean {statistics.fmean(gains):+.3f} over {len(gains)} seeds: {each}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=Path, required=True, help="JSON: name -> variant")
    parser.add_argument("--only", default="", help="comma-separated variant names")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--settings-for", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--per-gpu", type=int, default=4, help="runs at once on each GPU")
    parser.add_argument("--eval-samples", type=int, default=400)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/settings-sweep"))
    args = parser.parse_args()
    variants = json.loads(args.variants.read_text())
    names = args.only.split(",") if args.only else [n for n in variants if not n.startswith("_")]
    queue = [(n, s) for s in seeds(args.seeds) for n in names]
    args.folder.mkdir(parents=True, exist_ok=True)

    import torch

    gpus = list(range(torch.cuda.device_count())) or [None]
    slots = args.per_gpu if gpus != [None] else 1
    running, results = [], []
    while queue or running:
        for job in [j for j in running if j[0].poll() is not None]:
            running.remove(job)
            job[4].close()
            results.append(result(job[1], job[2], Path(job[4].name)))
            print(json.dumps(results[-1]), flush=True)
        while queue:
            load = {g: sum(job[3] == g for job in running) for g in gpus}
            gpu = min(gpus, key=lambda g: load[g])
            if load[gpu] >= slots:
                break
            name, seed = queue.pop(0)
            running.append(start(name, variants[name], seed, gpu, args, args.folder))
        time.sleep(2)
    card = torch.cuda.get_device_name() if gpus != [None] else "cpu"
    print(json.dumps({"card": card, "settings_for": args.settings_for, **summary(results)}))


if __name__ == "__main__":
    main()
