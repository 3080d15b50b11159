"""Cold start of ``python -m engine runs``: the wall time of listing runs from a fresh process.

A temporary data dir holds a studio database with a few recorded runs. Each repeat starts a new
interpreter that runs the CLI's ``main(["runs", ...])`` and then reports whether torch,
transformers or trl were imported. Baselines timed in the same run, the same way:

- ``python_startup_s``: an interpreter that imports nothing (the floor);
- ``heavy_imports_s``: an interpreter that imports torch, transformers and trl (what listing
  runs paid when the CLI loaded the trainers' modules);
- with ``--baseline-repo DIR`` (e.g. a checkout of the previous commit), ``engine runs`` from
  that tree against the same data dir.

Usage: ``python bench/cli_startup.py [--repeats N] [--baseline-repo DIR]``. The last line is one
JSON object; times are medians in seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from storage.paths import db_path  # noqa: E402
from storage.runs import create_run  # noqa: E402
from storage.sqlite.db import Database  # noqa: E402

HEAVY = ("torch", "transformers", "trl")
CLI_HARNESS = f"""
import json, sys
from engine.cli import main
code = main(sys.argv[1:])
print(json.dumps({{"code": code, "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def timed(args: list[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds of one fresh interpreter running ``args``, and its last output line."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{args[:2]} failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    return elapsed, lines[-1] if lines else ""


def median_time(args: list[str], cwd: Path, repeats: int) -> tuple[float, str]:
    runs = [timed(args, cwd) for _ in range(repeats)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="runs recorded in the data dir")
    parser.add_argument("--baseline-repo", type=Path, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "studio-data"
        data_dir.mkdir()
        with Database(db_path(data_dir)) as db:
            for i in range(args.runs):
                create_run(db, algorithm="grpo", config={"i": i}, name=f"run {i}")
        cli = ["runs", "--data-dir", str(data_dir)]
        # One untimed start warms the OS file cache, as a user's second command would find it.
        timed(["-c", CLI_HARNESS, *cli], REPO)
        floor_s, _ = median_time(["-c", "pass"], REPO, args.repeats)
        heavy_s, _ = median_time(["-c", f"import {', '.join(HEAVY)}"], REPO, args.repeats)
        runs_s, report = median_time(["-c", CLI_HARNESS, *cli], REPO, args.repeats)
        heavy = json.loads(report)["heavy"]
        result = {
            "engine_runs_s": round(runs_s, 3),
            "python_startup_s": round(floor_s, 3),
            "heavy_imports_s": round(heavy_s, 3),
            "engine_runs_over_heavy_imports": round(runs_s / heavy_s, 3),
            "torch_imported": "torch" in heavy,
            "transformers_imported": "transformers" in heavy,
            "trl_imported": "trl" in heavy,
            "runs_listed": args.runs,
            "repeats": args.repeats,
        }
        if args.baseline_repo is not None:
            base = args.baseline_repo.resolve()
            timed(["-m", "engine", *cli], base)
            base_s, _ = median_time(["-m", "engine", *cli], base, args.repeats)
            result["baseline_engine_runs_s"] = round(base_s, 3)
            result["engine_runs_over_baseline"] = round(runs_s / base_s, 3)
        print(
            f"engine runs: {runs_s:.2f} s (interpreter alone {floor_s:.2f} s, "
            f"torch+transformers+trl {heavy_s:.2f} s); heavy modules imported: {heavy or 'none'}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
