"""Shared by the benchmarks: train a config through the product's CLI and read its metrics back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.config.run_config import RunConfig  # noqa: E402
from storage import runs as run_store  # noqa: E402
from storage.paths import db_path  # noqa: E402
from storage.records.metrics import metrics_since  # noqa: E402
from storage.runs import RunInfo  # noqa: E402
from storage.sqlite.db import Database  # noqa: E402

LOG_FILE = "train.log"

# name -> [(step, value, time written)], finite values only
Series = dict[str, list[tuple[int, float, float]]]


def launch(
    config: RunConfig,
    data_dir: Path,
    *,
    cpus: Sequence[int] | None = None,
    threads: int | None = None,
    cold_compile: bool = False,
) -> subprocess.Popen:
    """Start ``python -m engine train`` on ``config`` with its own ``data_dir``.

    ``cpus`` pins the run to those cores and ``threads`` sets torch's thread count, so that
    runs sharing a machine do not compete for cores. ``cold_compile`` gives the run empty
    compile caches of its own (inductor's, Triton's and CUDA's, under ``data_dir``), so that
    it pays the cold compile a user's first run pays, whichever runs went before it.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    config_path = config.save(data_dir / "config.yaml")
    env = dict(os.environ)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    if cold_compile:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(data_dir / "inductor-cache")
        env["TRITON_CACHE_DIR"] = str(data_dir / "triton-cache")
        env["CUDA_CACHE_PATH"] = str(data_dir / "cuda-cache")
    cmd = [sys.executable, "-m", "engine", "train", str(config_path), "--data-dir", str(data_dir)]
    with open(data_dir / LOG_FILE, "ab") as log:
        return subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
        )


def collect(data_dir: Path) -> tuple[RunInfo, Series]:
    """The newest run in ``data_dir`` and its metrics."""
    with Database(db_path(data_dir)) as db:
        run = run_store.list_runs(db)[0]
        points, _ = metrics_since(db, run.id, 0, limit=10_000_000)
    series: Series = {}
    for p in points:
        if p.value is not None:
            series.setdefault(p.name, []).append((p.step, p.value, p.time))
    return run, series


def train_via_cli(config: RunConfig, data_dir: Path, **pinning) -> tuple[RunInfo, Series]:
    """Run ``config`` to its end in ``data_dir`` (see :func:`launch`); its run and metrics."""
    proc = launch(config, data_dir, **pinning)
    if proc.wait() != 0:
        tail = (data_dir / LOG_FILE).read_text(errors="replace")[-3000:]
        raise RuntimeError(f"the {config.algorithm} run failed:\n{tail}")
    return collect(data_dir)


def run_script(script: str, config: RunConfig, out_dir: Path) -> Any:
    """Run ``python -c script CONFIG_FILE OUT_DIR`` from the repo root (a baseline written
    without the product's engine) and return the JSON its last output line holds."""
    config_path = config.save(out_dir.parent / f"{out_dir.name}.yaml")
    done = subprocess.run(
        [sys.executable, "-c", script, str(config_path), str(out_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])
