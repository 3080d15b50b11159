"""The peak-memory estimate against a real GPU run with the micro-batch it picks.

A random-init Qwen2 with Qwen2.5-0.5B's shape (494M parameters, vocabulary 151,936, bf16) and a
word-level tokenizer covering its whole vocabulary are built here (nothing is downloaded). For
GRPO and PPO at 32 prompts x 8 completions x 256 new tokens, with ``micro_batch_size`` left
empty, each algorithm trains ``--steps`` steps through ``python -m engine train`` in its own
process; the process reports CUDA's peak allocated and reserved memory. Ends with one JSON line:
per algorithm the picked micro-batch, the estimate (at the assumed ``PROMPT_TOKENS`` and at the
prompts' real length), the measured peaks and the run's status.

    python bench/memory_estimate.py --steps 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qwen_model import build_qwen_05b  # noqa: E402

from engine.config.run_config import RunConfig  # noqa: E402
from engine.models.shape import model_shape  # noqa: E402
from engine.planning.memory import GIB, estimate  # noqa: E402
from engine.planning.micro_batch import with_default_micro_batch  # noqa: E402

QUESTION = "Tom has 12 apples and buys 7 more . How many apples does he have now ?"
WORDS = QUESTION.split(" ")

# Runs one config in this process as `engine train` does, then prints CUDA's peaks.
CHILD = """
import json, sys, torch
from engine.cli import main
code = main(["train", sys.argv[1], "--data-dir", sys.argv[2]])
gpu = torch.cuda.is_available()
print(json.dumps({"exit": code, "allocated": torch.cuda.max_memory_allocated() if gpu else 0,
                  "reserved": torch.cuda.max_memory_reserved() if gpu else 0}))
"""


def run_config(algorithm: str, model_dir: Path, data: Path, args: argparse.Namespace) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "model": {"name_or_path": str(model_dir)},
            "data": {"source": "file", "path": str(data), "split": "all"},
            "generation": {"num_generations": 8, "max_completion_length": args.tokens},
            "training": {
                "steps": args.steps,
                "prompts_per_step": args.prompts,
                "eval_samples": 0,
                "save_steps": 0,
                "samples_per_log": 0,
            },
        }
    )


def prompt_tokens(model_dir: Path) -> int:
    """Tokens of the question as the model reads it (chat template included)."""
    from transformers import AutoTokenizer

    from engine.data.prompts import render_prompt

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    text = render_prompt(tokenizer, [{"role": "user", "content": QUESTION}])
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--layers", type=int, default=24, help="fewer for a CPU smoke run")
    args = parser.parse_args()
    import torch

    gpu = torch.cuda.is_available()
    name = torch.cuda.get_device_name(0) if gpu else "cpu (estimates for an 80 GiB card)"
    card_bytes = torch.cuda.get_device_properties(0).total_memory if gpu else 80 * GIB
    results: dict[str, dict | str | float] = {"card": name, "card_gib": round(card_bytes / GIB, 1)}
    with tempfile.TemporaryDirectory(prefix="memory-estimate-") as tmp:
        work = Path(tmp)
        model_dir, data = work / "qwen2-0.5b-shape", work / "problems.jsonl"
        build_qwen_05b(model_dir, args.layers, WORDS)
        rows = [{"prompt": QUESTION, "answer": "19"} for _ in range(256)]
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        prompt = prompt_tokens(model_dir)
        results["prompt_tokens"] = prompt
        for algorithm in ("grpo", "ppo"):
            config = run_config(algorithm, model_dir, data, args)
            picked = with_default_micro_batch(config, card_bytes)
            shape = model_shape(picked.model)
            est = estimate(picked, shape)
            at_prompt = estimate(picked, shape, prompt_tokens=prompt)
            path = config.save(work / f"{algorithm}.yaml")
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(path), str(work / algorithm)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"},
            )
            last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
            measured = json.loads(last) if last.startswith("{") else {}
            if measured.get("exit") != 0:
                print(done.stderr[-3000:], file=sys.stderr)
            results[algorithm] = {
                "micro_batch": picked.training.micro_batch_size,
                "estimate_gib": round(est.peak / GIB, 2),
                "estimate_at_prompt_gib": round(at_prompt.peak / GIB, 2),
                "peak_allocated_gib": round(measured.get("allocated", float("nan")) / GIB, 2),
                "peak_reserved_gib": round(measured.get("reserved", float("nan")) / GIB, 2),
                "completed": measured.get("exit") == 0,
            }
            print(algorithm, results[algorithm], flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
