"""Dashboard latency: from a metric's write in a worker to its arrival in the Runs view's data.

Two measurements, both through the code the app runs (``ui.runs.poll.poll``, the Runs tab's
timer handler, and ``engine.tracking.recorder.StorageRecorder``, the worker's writer):

1. **Lag.** A worker process logs one training step every ``--step-interval`` seconds through
   ``StorageRecorder`` (as the TRL callback does), each step carrying its wall-clock write time
   as a metric. This process polls like a browser tab: ``poll()`` every second, as the 1 s
   ``gr.Timer`` does. Lag = the time a point lands in the view's series minus its write time.
   Target: p95 <= 1.5 s.
2. **Poll cost at 10k and 1M stored metric rows.** The quiet tick (nothing new: only the one
   cheap progress query) and the tick that brings one new step (progress query, the step's rows
   by cursor, run row, log lines, sample steps), with the table holding 10k and then 1M rows
   over many runs. Target: flat, <= 20 ms.

Usage: ``python bench/dashboard_latency.py [--seconds 20] [--repeats 200]``.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.storage_queries import timed
from engine.tracking.recorder import StorageRecorder
from storage import runs as run_store
from storage.paths import db_path
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from ui.runs.poll import poll
from ui.runs.state import RunView

WRITTEN_AT = "bench/written_at"
# Names the charts draw, padded with per-component series to 50 per step.
CHART_NAMES = [
    "reward/total",
    "reward/zero_std_fraction",
    "loss/policy",
    "policy/entropy",
    "policy/clip_ratio/region_mean",
    "completions/mean_length",
    "completions/clipped_ratio",
    "perf/tokens_per_s",
]
NAMES = CHART_NAMES + [f"rewards/component{k}" for k in range(50 - len(CHART_NAMES))]
METRICS_PER_STEP = 30  # about what a GRPO step logs with six reward components
POLL_SECONDS = 1.0


def worker(data_dir: str, run_id: str, steps: int, interval: float) -> None:
    """The writer process: one step every ``interval`` seconds through the worker's recorder."""
    db = Database(db_path(data_dir))
    recorder = StorageRecorder(db, run_id)
    try:
        for step in range(1, steps + 1):
            time.sleep(interval)
            values = {f"bench/metric{k}": step * 0.001 + k for k in range(METRICS_PER_STEP - 1)}
            values[WRITTEN_AT] = time.time()
            recorder.metrics(step, values)
            recorder.progress(step)
    finally:
        recorder.close()
        db.close()


def measure_lag(data_dir: Path, seconds: float, interval: float) -> list[float]:
    """Seconds from each step's write to its arrival in a polling RunView."""
    steps = int(seconds / interval)
    with Database(db_path(data_dir)) as db:
        run_id = run_store.create_run(
            db, algorithm="grpo", config={}, total_steps=steps, status=RunStatus.RUNNING
        ).id
        proc = mp.get_context("spawn").Process(
            target=worker, args=(str(data_dir), run_id, steps, interval)
        )
        proc.start()
        view = RunView()
        lags: list[float] = []
        seen = 0
        next_tick = time.monotonic()
        deadline = time.monotonic() + seconds + 30
        while (proc.is_alive() or seen < steps) and time.monotonic() < deadline:
            poll(db, view, run_id)
            arrived = time.time()
            series = view.series.get(WRITTEN_AT)
            if series is not None:
                lags += [arrived - v for v in series.values[seen:] if v is not None]
                seen = len(series)
            if seen >= steps and not proc.is_alive():
                break
            next_tick += POLL_SECONDS
            time.sleep(max(0.0, next_tick - time.monotonic()))
        proc.join(timeout=30)
    return lags


def fill(db: Database, runs: int, steps: int) -> list[str]:
    """Store ``runs x steps x len(NAMES)`` metric rows; returns the run ids."""
    ids = []
    for i in range(runs):
        rid = run_store.create_run(db, algorithm="grpo", config={"i": i}, total_steps=steps).id
        with MetricWriter(db, rid, flush_every=50_000, flush_seconds=60) as writer:
            for step in range(1, steps + 1):
                writer.log(step, {name: step + k * 0.1 for k, name in enumerate(NAMES)})
        ids.append(rid)
    return ids


def measure_poll(db: Database, run_ids: list[str], repeats: int) -> dict[str, float]:
    hot = run_ids[-1]
    view = RunView()
    poll(db, view, hot)  # the first full load of the run

    quiet_median, quiet_p95 = timed(lambda: poll(db, view, hot), repeats)
    last = view.series[NAMES[0]].steps[-1]
    step = [last]

    def one_new_step() -> None:
        step[0] += 1
        with MetricWriter(db, hot) as writer:
            writer.log(step[0], {name: 0.0 for name in NAMES})
        start = time.perf_counter()
        update = poll(db, view, hot)
        one_new_step.elapsed.append((time.perf_counter() - start) * 1000)
        assert update.figures, "a new step must redraw a chart"

    one_new_step.elapsed = []
    for _ in range(max(20, repeats // 5)):
        one_new_step()
    new = sorted(one_new_step.elapsed)
    return {
        "quiet_median_ms": quiet_median,
        "quiet_p95_ms": quiet_p95,
        "new_step_median_ms": statistics.median(new),
        "new_step_p95_ms": new[int(0.95 * (len(new) - 1))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the lag run")
    parser.add_argument("--step-interval", type=float, default=0.25)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        lags = sorted(measure_lag(Path(tmp) / "lag", args.seconds, args.step_interval))
        p95 = lags[int(0.95 * (len(lags) - 1))]
        print(
            f"lag over {len(lags)} steps (poll every {POLL_SECONDS:g} s): median "
            f"{statistics.median(lags):.3f} s, p95 {p95:.3f} s, max {lags[-1]:.3f} s"
        )
        result.update(
            lag_median_s=round(statistics.median(lags), 3),
            lag_p95_s=round(p95, 3),
            lag_max_s=round(lags[-1], 3),
            lag_steps=len(lags),
        )
        with Database(Path(tmp) / "cost" / "studio.db") as db:
            stored = 0
            # 10k rows: 2 runs x 100 steps x 50 metrics; then 20 more runs x 1000 steps: ~1M.
            for label, runs, steps in (("10k", 2, 100), ("1m", 20, 1000)):
                start = time.perf_counter()
                fill(db, runs, steps)
                stored += runs * steps * len(NAMES)
                run_ids = [r.id for r in run_store.list_runs(db)][::-1]
                elapsed = time.perf_counter() - start
                print(f"{label}: {stored:,} metric rows stored (+{elapsed:.1f} s)")
                for key, value in measure_poll(db, run_ids, args.repeats).items():
                    result[f"poll_{key.removesuffix('_ms')}_ms_{label}"] = round(value, 3)
                    print(f"  poll {key}: {value:.3f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
