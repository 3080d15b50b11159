"""Shared by the benchmarks: train a config through the product's CLI and read its metrics back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.config import RunConfig  # noqa: E402
from storage import runs as run_store  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.metrics import metrics_since  # noqa: E402
from storage.paths import db_path  # noqa: E402
from storage.runs import RunInfo  # noqa: E402

# name -> [(step, value, time written)], finite values only
Series = dict[str, list[tuple[int, float, float]]]


def train_via_cli(config: RunConfig, data_dir: Path, *, tag: str = "") -> tuple[RunInfo, Series]:
    """Run ``python -m engine train`` on ``config`` in ``data_dir``; return the run and its metrics.

    ``tag`` tells apart several runs of one algorithm in the same data dir.
    """
    config_path = config.save(data_dir / f"{config.algorithm}{tag}.yaml")
    before = {r.id for r in _runs(data_dir)}
    subprocess.run(
        [sys.executable, "-m", "engine", "train", str(config_path), "--data-dir", str(data_dir)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    run = next(r for r in _runs(data_dir) if r.id not in before)
    with Database(db_path(data_dir)) as db:
        points, _ = metrics_since(db, run.id, 0, limit=10_000_000)
    series: Series = {}
    for p in points:
        if p.value is not None:
            series.setdefault(p.name, []).append((p.step, p.value, p.time))
    return run, series


def _runs(data_dir: Path) -> list[RunInfo]:
    if not db_path(data_dir).exists():
        return []
    with Database(db_path(data_dir)) as db:
        return run_store.list_runs(db)
