"""kill -9 fault trials: real workers killed at varied moments, resumed, and checked.

Each trial starts a tiny run through the launcher (a real ``python -m engine run`` process),
waits for a moment (while the worker loads, before its first checkpoint, mid-step, right after a
checkpoint's temporary folder appears, right after a checkpoint is published), sends SIGKILL to
the worker's process group, lets the launcher's scan mark it ``interrupted``, resumes it and
waits for it to end. Then it checks what issue 11 asks of a crash-proof run:

- ``PRAGMA integrity_check`` of the shared database is ``ok``;
- rows lost: (step, name) metric pairs committed before the kill at or before the checkpoint the
  run resumed from, missing afterwards;
- duplicated (step, name) pairs and steps whose samples were stored twice;
- the run ends ``completed``.

Usage: ``python bench/kill_faults.py --trials 50 [--jobs 2]``; prints a table and one JSON line.
The reliability test in tests/e2e/test_kill_faults.py runs a few of the same trials.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from engine.config.run_config import RunConfig  # noqa: E402
from engine.run.launcher import Launcher  # noqa: E402
from engine.runtime.checkpoints import checkpoint_step, latest_checkpoint, staging_dir  # noqa: E402
from storage import runs as run_store  # noqa: E402
from storage.paths import db_path  # noqa: E402
from storage.records import samples as sample_store  # noqa: E402
from storage.records.metrics import metrics_since  # noqa: E402
from storage.sqlite.db import Database  # noqa: E402
from storage.sqlite.schema import TERMINAL_STATUSES, RunStatus  # noqa: E402

# mid_overlap: mid-step of a training.rollout async run, whose worker thread is sampling the next
# step's completions while the step updates.
MOMENTS = (
    "loading", "before_first_checkpoint", "mid_step", "mid_overlap", "during_save",
    "after_publish",
)  # fmt: skip
STEPS = 6
SAVE_STEPS = 2
TIMEOUT_S = 300.0


@dataclass
class Trial:
    """What one kill did and what the resumed run kept."""

    moment: str
    algorithm: str
    killed_at_step: int
    resumed_from_step: int | None
    interrupted_after_s: float | None  # from the kill to the scan marking it interrupted
    rows_checked: int
    rows_lost: int
    duplicates: int
    samples_doubled: int
    integrity: str
    final_status: str

    @property
    def ok(self) -> bool:
        return (
            self.rows_lost == 0
            and self.duplicates == 0
            and self.samples_doubled == 0
            and self.integrity == "ok"
            and self.final_status == RunStatus.COMPLETED
        )


def tiny_config(algorithm: str, moment: str) -> RunConfig:
    """A run of a few seconds on the shipped default model, with a checkpoint every 2 steps
    (every 4 when the kill must come before the first one); async rollouts for mid_overlap."""
    save_steps = 2 * SAVE_STEPS if moment == "before_first_checkpoint" else SAVE_STEPS
    return RunConfig.from_dict(
        {
            "name": f"kill {moment}",
            "algorithm": algorithm,
            "generation": {"num_generations": 4, "max_completion_length": 16},
            "training": {
                "steps": STEPS,
                "prompts_per_step": 2,
                "logging_steps": 1,
                "eval_steps": 0,
                "eval_samples": 0,
                "save_steps": save_steps,
                "save_total_limit": 2,
                "samples_per_log": 4,
                "rollout": "async" if moment == "mid_overlap" else "sync",
            },
        }
    )


def _run(db: Database, run_id: str):
    return run_store.get_run(db, run_id)


def _wait(predicate, timeout: float = TIMEOUT_S, every: float = 0.002) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


def _wait_for_moment(moment: str, db: Database, run_id: str, run_dir: Path, rng: random.Random):
    """Return once the worker is at ``moment`` (or has ended, which the trial then reports)."""

    def ended() -> bool:
        return _run(db, run_id).status in TERMINAL_STATUSES

    def step_at_least(n: int) -> bool:
        return _run(db, run_id).last_step >= n or ended()

    if moment == "loading":
        time.sleep(rng.uniform(0.5, 4.0))  # importing torch, loading the model, or stepping
    elif moment == "before_first_checkpoint":
        _wait(lambda: step_at_least(rng.randint(1, 2 * SAVE_STEPS - 1)), every=0.01)
    elif moment in ("mid_step", "mid_overlap"):
        _wait(lambda: step_at_least(rng.randint(1, STEPS - 1)), every=0.01)
        time.sleep(rng.uniform(0.0, 0.3))
    elif moment == "during_save":
        target = rng.randrange(SAVE_STEPS, STEPS + 1, SAVE_STEPS)
        staged = staging_dir(run_dir) / f"checkpoint-{target}"
        _wait(lambda: staged.exists() or (run_dir / staged.name).exists() or ended(), every=0.0005)
        time.sleep(rng.uniform(0.0, 0.01))
    elif moment == "after_publish":
        target = rng.randrange(SAVE_STEPS, STEPS + 1, SAVE_STEPS)
        _wait(lambda: (run_dir / f"checkpoint-{target}").exists() or ended(), every=0.0005)
    else:
        raise ValueError(f"moment: {moment!r} is not one of {', '.join(MOMENTS)}")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=30)


def _stored(db: Database, run_id: str) -> tuple[list[tuple[int, str]], Counter]:
    rows, _ = metrics_since(db, run_id, 0, limit=10_000_000)
    pairs = [(r.step, r.name) for r in rows]
    samples = Counter(
        {
            step: len(sample_store.samples_at(db, run_id, step))
            for step in sample_store.sample_steps(db, run_id)
        }
    )
    return pairs, samples


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def kill_trial(data_dir: Path, algorithm: str, moment: str, rng: random.Random) -> Trial:
    """One trial (see the module docstring) in ``data_dir``."""
    launcher = Launcher(data_dir, max_concurrent=64)
    config = tiny_config(algorithm, moment)
    run_id = launcher.start(config)
    run_dir = launcher.run_dir(run_id)
    with Database(db_path(data_dir)) as db:
        _wait_for_moment(moment, db, run_id, run_dir, rng)
        run = _run(db, run_id)
        killed_at = run.last_step
        interrupted_after = None
        if run.status == RunStatus.RUNNING:
            _kill(run.pid)
            killed = time.monotonic()
            if _wait(lambda: run_id in launcher.scan(), every=0.05, timeout=30):
                interrupted_after = time.monotonic() - killed
        before, _ = _stored(db, run_id)  # exactly what was committed when the worker died
        resume_from = latest_checkpoint(run_dir)
        resumed_step = None if resume_from is None else checkpoint_step(resume_from)
        if _run(db, run_id).status != RunStatus.COMPLETED:
            launcher.resume(run_id)
            _wait(lambda: _run(db, run_id).status in TERMINAL_STATUSES, every=0.2)
        final = _run(db, run_id)
        after, samples = _stored(db, run_id)
    kept = set(after)
    checked = [pair for pair in set(before) if pair[0] <= (resumed_step or -1)]
    per_step = min(config.training.samples_per_log, config.training.prompts_per_step * 4)
    if final.status == RunStatus.RUNNING:  # never ended: leave no worker behind
        _kill(final.pid)
    return Trial(
        moment=moment,
        algorithm=algorithm,
        killed_at_step=killed_at,
        resumed_from_step=resumed_step,
        interrupted_after_s=interrupted_after,
        rows_checked=len(checked),
        rows_lost=sum(pair not in kept for pair in checked),
        duplicates=len(after) - len(kept),
        samples_doubled=sum(count > per_step for count in samples.values()),
        integrity=integrity(db_path(data_dir)),
        final_status=str(final.status),
    )


def run_trials(data_dir: Path, trials: int, *, jobs: int = 1, seed: int = 0) -> list[Trial]:
    """``trials`` kills, cycling through every moment and GRPO/PPO (GRPO/RLOO at mid_overlap:
    PPO has no async rollouts), ``jobs`` at a time in one shared data dir (several workers
    writing one database, as in the app)."""

    def algorithm(i: int, moment: str) -> str:
        pair = ("grpo", "rloo") if moment == "mid_overlap" else ("grpo", "ppo")
        return pair[(i // len(MOMENTS)) % 2]

    moments = [MOMENTS[i % len(MOMENTS)] for i in range(trials)]
    plan = [(m, algorithm(i, m), seed + i) for i, m in enumerate(moments)]
    results: list[Trial] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not plan:
                    return
                moment, algorithm, trial_seed = plan.pop(0)
            trial = kill_trial(data_dir, algorithm, moment, random.Random(trial_seed))
            with lock:
                results.append(trial)
                print(_row(trial), flush=True)

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


HEADER = (
    f"{'moment':<24}{'algo':<6}{'killed@':>8}{'resumed@':>9}{'marked s':>9}"
    f"{'checked':>8}{'lost':>5}{'dups':>5}{'2x smp':>7}  {'integrity':<10}final"
)


def _row(t: Trial) -> str:
    marked = "-" if t.interrupted_after_s is None else f"{t.interrupted_after_s:.2f}"
    resumed = "-" if t.resumed_from_step is None else str(t.resumed_from_step)
    return (
        f"{t.moment:<24}{t.algorithm:<6}{t.killed_at_step:>8}{resumed:>9}{marked:>9}"
        f"{t.rows_checked:>8}{t.rows_lost:>5}{t.duplicates:>5}{t.samples_doubled:>7}  "
        f"{t.integrity:<10}{t.final_status}"
    )


#: The figures of :func:`summary` that RELIABILITY.md lists first, in this order.
KILL_FIGURES = (
    "kill_faults",
    "rows_checked",
    "rows_lost",
    "duplicate_pairs",
    "samples_doubled_steps",
    "integrity_failures",
    "not_completed",
)


def summary(results: list[Trial]) -> dict[str, object]:
    """The figures RELIABILITY.md reports, snake_case with units."""
    kills = [t for t in results if t.interrupted_after_s is not None]
    return {
        "kill_faults": len(kills),
        "trials": len(results),
        "kills_by_moment": dict(Counter(t.moment for t in kills)),
        "rows_checked": sum(t.rows_checked for t in results),
        "rows_lost": sum(t.rows_lost for t in results),
        "duplicate_pairs": sum(t.duplicates for t in results),
        "samples_doubled_steps": sum(t.samples_doubled for t in results),
        "integrity_failures": sum(t.integrity != "ok" for t in results),
        "not_completed": sum(t.final_status != RunStatus.COMPLETED for t in results),
        "max_interrupted_after_s": max((t.interrupted_after_s for t in kills), default=None),
        "missed_kills": len(results) - len(kills),
        "trials_ok": sum(t.ok for t in results),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=1, help="trials at a time (one data dir)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None, help="default: a temporary folder")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="kill-faults-") as tmp:
        data_dir = Path(args.data_dir or tmp)
        os.environ["STUDIO_DATA_DIR"] = str(data_dir)
        print(HEADER, flush=True)
        started = time.monotonic()
        results = run_trials(data_dir, args.trials, jobs=args.jobs, seed=args.seed)
        result = summary(results) | {"wall_s": round(time.monotonic() - started, 1)}
    print(json.dumps(result))
    return 0 if result["trials_ok"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
