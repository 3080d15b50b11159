"""Two default runs at once on this machine's cores: with the launcher's core shares, without
them (each worker on every core, as before), and one run alone.

    .venv/bin/python bench/concurrent_runs.py [--steps 8] [--prompts 8] [--warmup 2]

Each run is the default config (the shipped model, 8 prompts x 8 completions, 96 new tokens;
``--prompts`` makes steps smaller on a busy machine) started as the dashboard starts it (a worker
subprocess per run). Seconds per step are the median of the trainer's ``perf/step_time_s`` after
the first ``--warmup`` steps. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.config.run_config import RunConfig  # noqa: E402
from engine.run.launcher import Launcher, run_command  # noqa: E402
from engine.run.saved_models import recorded_config  # noqa: E402
from engine.tracking import metric_names  # noqa: E402
from storage import runs as run_store  # noqa: E402
from storage.paths import db_path  # noqa: E402
from storage.records.metrics import metrics_since  # noqa: E402
from storage.sqlite.db import Database  # noqa: E402
from storage.sqlite.schema import RunStatus  # noqa: E402

DONE = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.INTERRUPTED, RunStatus.STOPPED)


def config(args: argparse.Namespace, name: str) -> RunConfig:
    training = {"steps": args.steps, "prompts_per_step": args.prompts}
    return RunConfig.from_dict(
        {"name": name, "training": {**training, "eval_samples": 0, "save_steps": 0}}
    )


def wait_done(data_dir: Path, run_ids: list[str]) -> None:
    while True:
        with Database(db_path(data_dir)) as db:
            runs = [run_store.get_run(db, r) for r in run_ids]
        if all(r.status in DONE for r in runs):
            failed = [r for r in runs if r.status != RunStatus.COMPLETED]
            if failed:
                raise RuntimeError(
                    f"runs did not complete: {[(r.id, r.error_message) for r in failed]}"
                )
            return
        time.sleep(1.0)


def seconds_per_step(data_dir: Path, run_id: str, warmup: int) -> float:
    with Database(db_path(data_dir)) as db:
        points, _ = metrics_since(db, run_id, 0, names=[metric_names.STEP_TIME], limit=10_000_000)
    times = [p.value for p in points if p.step > warmup and p.value is not None]
    return statistics.median(times)


def alone(args: argparse.Namespace, root: Path) -> float:
    data_dir = root / "alone"
    launcher = Launcher(data_dir, max_concurrent=1)
    run_id = launcher.start(config(args, "alone"))
    wait_done(data_dir, [run_id])
    return seconds_per_step(data_dir, run_id, args.warmup)


def together_shared(args: argparse.Namespace, root: Path) -> list[float]:
    """Two runs through the launcher with two slots: each gets its share of the cores."""
    data_dir = root / "shared"
    launcher = Launcher(data_dir, max_concurrent=2)
    ids = [launcher.start(config(args, f"shared {i}")) for i in range(2)]
    wait_done(data_dir, ids)
    return [seconds_per_step(data_dir, r, args.warmup) for r in ids]


def together_unshared(args: argparse.Namespace, root: Path) -> list[float]:
    """Two workers started the way the launcher started them before core shares existed."""
    data_dir = root / "unshared"
    launcher = Launcher(data_dir, max_concurrent=2)
    ids = [launcher.record(config(args, f"unshared {i}")) for i in range(2)]
    env = {**os.environ, "STUDIO_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            run_command(recorded_config(data_dir, r), launcher.run_dir(r), r, data_dir),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for r in ids
    ]
    for proc in procs:
        proc.wait()
    wait_done(data_dir, ids)
    return [seconds_per_step(data_dir, r, args.warmup) for r in ids]


def kill_workers(root: Path) -> None:
    """Leave no worker behind when the bench is interrupted (each leads its own session)."""
    for db_file in root.glob("*/studio.db"):
        with Database(db_file) as db:
            for run in run_store.list_runs(db, statuses=[RunStatus.RUNNING]):
                with contextlib.suppress(ProcessLookupError, TypeError):
                    os.killpg(run.pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--warmup", type=int, default=2, help="first steps left out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        try:
            one = alone(args, root)
            unshared = together_unshared(args, root)
            shared = together_shared(args, root)
        finally:
            kill_workers(root)
    cores = len(os.sched_getaffinity(0))
    result = {
        "cores": cores,
        "steps_per_run": args.steps,
        "prompts_per_step": args.prompts,
        "alone_s_per_step": round(one, 3),
        "together_unshared_s_per_step": [round(v, 3) for v in unshared],
        "together_shared_s_per_step": [round(v, 3) for v in shared],
        # Steps per second of the machine, both runs together, relative to one run alone.
        "unshared_throughput_vs_alone": round(sum(one / v for v in unshared), 3),
        "shared_throughput_vs_alone": round(sum(one / v for v in shared), 3),
    }
    print(
        f"alone {one:.2f} s/step; two together: unshared {unshared} s/step, shared {shared} s/step"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
