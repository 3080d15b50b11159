"""A run's stored results as plain files: for notebooks, spreadsheets and archives.

``export_run`` writes into a folder:

- ``run.json``: id, name, algorithm, status, times (epoch seconds), steps, error, and the
  user's tags and note;
- ``config.yaml``: the run config, as ``python -m engine train`` reads it (a file the app
  stored for an upload named by its name alone: its folder is the server's);
- ``metrics.csv``: one row per step, one column per metric (``step``, ``time``, then names in
  alphabetical order; empty cells where a metric was not logged or was not finite);
- ``samples.jsonl``: every stored completion with its reward trace, one JSON object a line;
- ``distributions.jsonl``: each step's distributions over its whole batch (``step``, ``name``,
  ``count``, ``values``: see :mod:`storage.records.distributions`), one a line;
- ``logs.txt``: the run's log lines with their UTC time and level;
- ``model/``: the model folder given, copied (the final model or a checkpoint).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from storage.labels import label_of
from storage.records.distributions import distributions_since
from storage.records.logs import logs_since
from storage.records.metrics import metrics_since
from storage.records.samples import sample_steps, samples_at
from storage.runs import RunNotFoundError, get_run
from storage.sqlite.db import Database
from storage.sqlite.schema import Sample

PAGE = 50_000
RUN_FIELDS = (
    "id",
    "name",
    "algorithm",
    "status",
    "created_at",
    "started_at",
    "ended_at",
    "last_step",
    "total_steps",
    "error_message",
)
# A sample's line: every field but the row id and the run (the export is of one run).
SAMPLE_EXPORT_FIELDS = tuple(name for name in Sample.model_fields if name not in ("id", "run_id"))


def export_run(
    db: Database, run_id: str, out_dir: str | Path, *, model_dir: Path | None = None
) -> Path:
    """Write the run's files (see the module docstring) into ``out_dir``; returns it."""
    run = get_run(db, run_id)
    if run is None:
        raise RunNotFoundError(f"no run with id {run_id!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    info = {name: getattr(run, name) for name in RUN_FIELDS}
    info["status"] = str(run.status)
    label = label_of(db, run_id)
    info["tags"], info["note"] = (label.tags, label.note) if label else ([], "")
    (out / "run.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    (out / "config.yaml").write_text(config_yaml(run.config), encoding="utf-8")
    write_metrics_csv(db, run_id, out / "metrics.csv")
    write_samples_jsonl(db, run_id, out / "samples.jsonl")
    write_distributions_jsonl(db, run_id, out / "distributions.jsonl")
    write_logs(db, run_id, out / "logs.txt")
    if model_dir is not None:
        shutil.copytree(model_dir, out / "model", dirs_exist_ok=True)
    return out


def _pages(read: Callable[..., tuple[list[Any], int]], db: Database, run_id: str) -> Iterator:
    """Every row ``read`` (a ``*_since(db, run_id, cursor, limit=)`` reader) gives, page by
    page, in the order written."""
    cursor = 0
    while True:
        rows, cursor = read(db, run_id, cursor, limit=PAGE)
        yield from rows
        if len(rows) < PAGE:
            return


def write_metrics_csv(db: Database, run_id: str, path: Path) -> int:
    """The run's metrics, one row per step; returns the number of rows."""
    by_step: dict[int, dict[str, float | None]] = {}
    times: dict[int, float] = {}
    for p in _pages(metrics_since, db, run_id):
        by_step.setdefault(p.step, {})[p.name] = p.value
        times[p.step] = max(times.get(p.step, 0.0), p.time)
    names = sorted({name for row in by_step.values() for name in row})
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "time", *names])
        for step in sorted(by_step):
            row = by_step[step]
            cells = ["" if row.get(n) is None else repr(row[n]) for n in names]
            writer.writerow([step, f"{times[step]:.3f}", *cells])
    return len(by_step)


def write_samples_jsonl(db: Database, run_id: str, path: Path) -> int:
    """Every stored sample of the run with its trace; returns how many."""
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for step in sample_steps(db, run_id):
            for sample in samples_at(db, run_id, step):
                record = {name: getattr(sample, name) for name in SAMPLE_EXPORT_FIELDS}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
    return count


def write_distributions_jsonl(db: Database, run_id: str, path: Path) -> int:
    """Every stored distribution of the run, in the order written; returns how many."""
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for row in _pages(distributions_since, db, run_id):
            record = {"step": row.step, "name": row.name, "count": row.count}
            handle.write(json.dumps({**record, "values": row.values}) + "\n")
            count += 1
    return count


def write_logs(db: Database, run_id: str, path: Path) -> int:
    """The run's log lines as ``YYYY-MM-DD HH:MM:SS LEVEL message``; returns how many."""
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for line in _pages(logs_since, db, run_id):
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(line.time))
            handle.write(f"{stamp} {line.level} {line.message}\n")
            count += 1
    return count


# A stored upload: <data dir>/uploads/[<owner folder>/]<32 hex digits of its hash>.<suffix>
# (engine.config.input_policy names them so).
_STORED_UPLOAD = re.compile(r"(?:.*[/\\])?uploads[/\\](?:[0-9a-f]{24}[/\\])?([0-9a-f]{32}\.[a-z]+)")
UPLOAD_NOTE = (
    "# data.path names a file uploaded to the app by its stored name; its folder on the "
    "server is not shown.\n# To run this config elsewhere, set data.path to your copy of "
    "the file.\n"
)


def config_yaml(config: Mapping[str, Any]) -> str:
    """A run's recorded config (its row's) as the YAML ``python -m engine train`` reads: for a
    download, an export or the Hub, with no second copy kept. A stored upload's path is written
    as its file name: a downloaded or published config never shows where the server keeps its
    data (the README's promise for a public app)."""
    shown = _without_upload_folders(dict(config))
    note = UPLOAD_NOTE if shown != dict(config) else ""
    return note + yaml.safe_dump(shown, sort_keys=False, allow_unicode=True)


def _without_upload_folders(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_upload_folders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_upload_folders(v) for v in value]
    if isinstance(value, str) and (stored := _STORED_UPLOAD.fullmatch(value)):
        return stored.group(1)
    return value
