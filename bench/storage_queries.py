"""Cost of the dashboard's poll queries at 10k and 1M stored metric rows.

Builds a studio database in a temporary dir (10k rows: 2 runs x 50 metrics x 100 steps; 1M
rows: 20 runs x 50 metrics x 1000 steps), then times, as the UI's 1 s timer would run them:

- ``latest_steps``: the one cheap query per tick (last step of every run);
- ``run_progress``: status, last step and newest metric id of every run;
- ``metrics_since`` tail: the rows of one new step after the reader's cursor (50 rows);
- ``metrics_since`` empty: a tick with nothing new;
- ``metric_names``; ``metric_series`` of one metric over 5 runs (compare view);
- ``list_runs`` and ``get_run``: the Runs table and the selected run, read into row objects;
- ``metrics_since`` from cursor 0: the first full load of one run (grows with the run's size).

Usage: ``python bench/storage_queries.py [--repeats N]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, text

from storage.progress import latest_steps, run_progress
from storage.records.metrics import metric_names, metric_series, metrics_since
from storage.runs import create_run, get_run, heartbeat, list_runs
from storage.sqlite.db import Database
from storage.sqlite.schema import Metric

NAMES = [f"group{g}/metric{m}" for g in range(5) for m in range(10)]  # 50 names
BATCH = 50_000


def build(path: Path, runs: int, steps: int) -> list[str]:
    """A database with ``runs x 50 x steps`` metric rows; returns the run ids."""
    with Database(path) as db:
        run_ids = [create_run(db, algorithm="grpo", config={"i": i}).id for i in range(runs)]
        now = time.time()
        batch: list[dict] = []
        for rid in run_ids:
            for step in range(1, steps + 1):
                for k, name in enumerate(NAMES):
                    batch.append(
                        {
                            "run_id": rid,
                            "step": step,
                            "name": name,
                            "value": step * 0.01 + k,
                            "time": now,
                        }
                    )
                if len(batch) >= BATCH:
                    rows = batch
                    db.write(lambda s, rows=rows: s.execute(insert(Metric), rows))
                    batch = []
            heartbeat(db, rid, steps)
        if batch:
            db.write(lambda s: s.execute(insert(Metric), batch))
    return run_ids


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median and p95 of ``fn``'s wall time in milliseconds (after 3 warm-up calls)."""
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def measure(path: Path, run_ids: list[str], repeats: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with Database(path) as db:
        hot = run_ids[-1]
        _, last_id = metrics_since(db, hot, 0, limit=10_000_000)
        tail_cursor = last_id - len(NAMES)
        total = db.read(lambda s: s.execute(text("SELECT COUNT(*) FROM metric")).scalar())
        plan = db.read(
            lambda s: s.execute(
                text(
                    "EXPLAIN QUERY PLAN SELECT id, step, name, value, time FROM metric "
                    "WHERE run_id = :r AND id > :c ORDER BY id LIMIT 50000"
                ),
                {"r": hot, "c": tail_cursor},
            ).all()
        )
        print(f"  {total:,} metric rows; metrics_since plan: {[row[-1] for row in plan]}")

        def tail() -> None:
            rows, _ = metrics_since(db, hot, tail_cursor)
            assert len(rows) == len(NAMES)

        cases = {
            "latest_steps": lambda: latest_steps(db),
            "run_progress": lambda: run_progress(db),
            "metrics_since_tail": tail,
            "metrics_since_empty": lambda: metrics_since(db, hot, last_id),
            "poll_tick": lambda: (latest_steps(db), metrics_since(db, hot, tail_cursor)),
            "metric_names": lambda: metric_names(db, hot),
            "metric_series_5_runs": lambda: metric_series(db, run_ids[-5:], NAMES[0]),
            "list_runs": lambda: list_runs(db),
            "get_run": lambda: get_run(db, hot),
        }
        for key, fn in cases.items():
            median, p95 = timed(fn, repeats)
            out[f"{key}_ms"] = median
            out[f"{key}_p95_ms"] = p95
            print(f"  {key:<22} median {median:8.3f} ms   p95 {p95:8.3f} ms")
        full_rows = len(metrics_since(db, hot, 0)[0])
        median, _ = timed(lambda: metrics_since(db, hot, 0), max(3, repeats // 20))
        out["metrics_since_full_run_ms"] = median
        print(f"  metrics_since full run ({full_rows:,} rows) median {median:.1f} ms")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, runs, steps in (("10k", 2, 100), ("1m", 20, 1000)):
            path = Path(tmp) / f"studio-{label}.db"
            start = time.perf_counter()
            run_ids = build(path, runs, steps)
            build_s = time.perf_counter() - start
            print(
                f"{label}: built {runs} runs x {len(NAMES)} metrics x {steps} steps "
                f"in {build_s:.1f} s ({runs * len(NAMES) * steps / build_s:,.0f} rows/s)"
            )
            for key, value in measure(path, run_ids, args.repeats).items():
                result[f"{key.removesuffix('_ms')}_ms_{label}"] = round(value, 3)
            result[f"insert_rows_per_s_{label}"] = round(runs * len(NAMES) * steps / build_s)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
