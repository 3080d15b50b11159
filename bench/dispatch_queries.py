"""Cost of the supervisor's idle round: ``Launcher.dispatch()`` with nothing queued.

The app's supervisor dispatches every 5 s. Each round counts its slots from the machine's GPUs;
before the launcher cached them, every round ran nvidia-smi for that. Timed in the same run,
rounds interleaved:

- ``cached``: one launcher as the app holds it (nvidia-smi once, for the GPU set);
- ``query_every_round`` (the baseline, the earlier behaviour): the same launcher with the GPU set
  forgotten before each round, so each round runs nvidia-smi once.

nvidia-smi is the real one where it is on PATH. Without it, ``--stand-in-smi`` puts a script
first on PATH that prints a two-GPU table, which times a subprocess start, not the driver query
(``nvidia_smi`` in the result says which). The data dir holds ``--runs`` stopped runs.

Usage: ``python bench/dispatch_queries.py [--rounds N] [--stand-in-smi]``. The last line is
one JSON object; times are medians in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.run.launcher import Launcher  # noqa: E402
from engine.runtime.devices import list_gpus  # noqa: E402
from storage.paths import db_path  # noqa: E402
from storage.runs import create_run, set_status  # noqa: E402
from storage.sqlite.db import Database  # noqa: E402
from storage.sqlite.schema import RunStatus  # noqa: E402

STAND_IN = "#!/bin/sh\nprintf '0, 81000, 81559\\n1, 20000, 81559\\n'\n"


class CountedQuery:
    """The real ``list_gpus``, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> list:
        self.calls += 1
        return list_gpus()


def round_ms(launcher: Launcher, forget: bool) -> float:
    if forget:
        launcher.__dict__.pop("machine_gpus", None)
    start = time.perf_counter()
    assert launcher.dispatch() == []
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20, help="stopped runs in the data dir")
    parser.add_argument("--stand-in-smi", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        kind = "real" if shutil.which("nvidia-smi") else "absent"
        if kind == "absent" and args.stand_in_smi:
            script = Path(tmp) / "bin" / "nvidia-smi"
            script.parent.mkdir()
            script.write_text(STAND_IN)
            script.chmod(0o755)
            os.environ["PATH"] = f"{script.parent}{os.pathsep}{os.environ['PATH']}"
            kind = "stand-in"
        data_dir = Path(tmp) / "studio-data"
        data_dir.mkdir()
        with Database(db_path(data_dir)) as db:
            for i in range(args.runs):
                run = create_run(db, algorithm="grpo", config={"i": i}, name=f"r{i}")
                set_status(db, run.id, RunStatus.STOPPED)  # nothing left for a round to start
        queries = {"cached": CountedQuery(), "query_every_round": CountedQuery()}
        launchers = {name: Launcher(data_dir, gpus=q) for name, q in queries.items()}
        for launcher in launchers.values():  # warm-up: imports, the database file, the cache
            launcher.dispatch()
        times: dict[str, list[float]] = {name: [] for name in launchers}
        for _ in range(args.rounds):
            for name, launcher in launchers.items():
                times[name].append(round_ms(launcher, forget=name == "query_every_round"))
        cached = statistics.median(times["cached"])
        fresh = statistics.median(times["query_every_round"])
        result = {
            "dispatch_idle_cached_ms": round(cached, 3),
            "dispatch_idle_query_every_round_ms": round(fresh, 3),
            "query_every_round_over_cached": round(fresh / cached, 2),
            "nvidia_smi_calls_cached": queries["cached"].calls,
            "nvidia_smi_calls_query_every_round": queries["query_every_round"].calls,
            "gpus": len(launchers["cached"].machine_gpus),
            "nvidia_smi": kind,
            "rounds": args.rounds,
        }
    print(
        f"idle dispatch: {cached:.2f} ms cached, {fresh:.2f} ms querying nvidia-smi ({kind}) "
        f"every round; calls {result['nvidia_smi_calls_cached']} vs "
        f"{result['nvidia_smi_calls_query_every_round']} over {args.rounds} rounds"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
