"""A stand-in run worker for the concurrency tests: writes one run's metrics and samples.

Run as ``python metric_writer_process.py DB RUN_ID SECONDS``; every step logs NAMES metrics
(value ``step * 1000 + k`` for name ``m{k}``) through a batching MetricWriter and stores
SAMPLES samples, as fast as it can, for SECONDS. The last stdout line is JSON with the number
of steps written. Any storage warning or error goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from storage.records.metrics import MetricWriter
from storage.records.samples import add_samples
from storage.runs import heartbeat, set_status
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

NAMES = 20
SAMPLES = 4


def expected_metrics(steps: int) -> list[tuple[int, str, float]]:
    return [(s, f"m{k}", float(s * 1000 + k)) for s in range(1, steps + 1) for k in range(NAMES)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("seconds", type=float)
    parser.add_argument("--flush-every", type=int, default=3 * NAMES)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with Database(args.db) as db:
        set_status(db, args.run_id, RunStatus.RUNNING)
        writer = MetricWriter(db, args.run_id, flush_every=args.flush_every, flush_seconds=0.05)
        deadline = time.monotonic() + args.seconds
        step = 0
        while time.monotonic() < deadline:
            step += 1
            writer.log(step, {f"m{k}": step * 1000 + k for k in range(NAMES)})
            add_samples(
                db,
                args.run_id,
                step,
                [
                    {"prompt": f"p{step}", "completion": f"c{i}", "total": i, "group": 0}
                    for i in range(SAMPLES)
                ],
            )
            if step % 10 == 0:
                heartbeat(db, args.run_id, step)
        writer.close()
        set_status(db, args.run_id, RunStatus.COMPLETED)
    print(json.dumps({"steps": step}), flush=True)


if __name__ == "__main__":
    main()
