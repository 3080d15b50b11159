"""What does running through Reward Studio's worker cost over a bare TRL GRPOTrainer script?

Runs the same GRPO config twice on the default model, in one invocation: once as
``python -m engine train`` (metrics, sample traces, heartbeats and logs into SQLite) and once as
a bare ``GRPOTrainer`` with the same reward functions and arguments. Held-out evaluation and
checkpoints are off in both, so the difference is our per-step bookkeeping. Prints the median
per-step time of each, their ratio, and the cost of one step's metric write.

    python bench/engine_overhead.py --steps 20
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

from studio_run import run_script, train_via_cli

from engine.config.run_config import RunConfig
from storage import runs as run_store
from storage.paths import db_path
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database

BARE_SCRIPT = """
import json, sys, time
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
ends = []

class StepClock(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        ends.append(time.perf_counter())

trainer = GRPOTrainer(model=model, reward_funcs=funcs,
                      args=build_trl_args(config, sys.argv[2]),
                      train_dataset=Dataset.from_list(load_rows(config.data)),
                      processing_class=tokenizer, callbacks=[StepClock()])
trainer.train()
print(json.dumps([b - a for a, b in zip(ends, ends[1:])]))
"""


def metric_write_cost_ms(data_dir: Path, metrics_per_step: int = 40, steps: int = 200) -> float:
    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(db, algorithm="bench", config={})
        writer = MetricWriter(db, run.id)
        values = {f"bench/metric_{i}": float(i) for i in range(metrics_per_step)}
        started = time.perf_counter()
        for step in range(steps):
            writer.log(step, values)
            writer.flush()
        elapsed = time.perf_counter() - started
        writer.close()
    return elapsed / steps * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    config = RunConfig.from_dict(
        {"name": "overhead", "training": {"steps": args.steps, "eval_samples": 0, "save_steps": 0}}
    )
    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        tmp = Path(tmp)
        bare_times = run_script(BARE_SCRIPT, config, tmp / "bare")
        _, series = train_via_cli(config, tmp / "studio")
        stamps = [t for _, _, t in series["train/epoch"]]  # one metric row per step
        studio_times = [b - a for a, b in itertools.pairwise(stamps)]
        write_ms = metric_write_cost_ms(tmp / "writes")
    # The first steps warm up allocators and caches in both; compare the steady state.
    bare_s = statistics.median(bare_times[2:])
    studio_s = statistics.median(studio_times[2:])
    print(f"bare TRL: {bare_s:.3f} s/step; through the worker: {studio_s:.3f} s/step")
    print(f"one step's metric write (40 metrics, flushed): {write_ms:.2f} ms")
    print(
        json.dumps(
            {
                "bare_step_s": round(bare_s, 4),
                "studio_step_s": round(studio_s, 4),
                "overhead_ratio": round(studio_s / bare_s, 4),
                "metric_write_ms": round(write_ms, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
