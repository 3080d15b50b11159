"""Data files are bounded before they are read: the web process reads a file's head only and
refuses a Parquet file of too many rows from its metadata; the worker counts rows while
streaming; deep JSON is refused by field; a worker over a public app's memory cap is ended
with a message."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.config.input_policy import InputPolicy
from engine.config.run_config import RunConfig
from engine.data.datasets import DatasetError, DataSpec, load_rows
from engine.fields import ConfigError
from engine.run.launcher import Launcher
from engine.run.preflight import check_inputs
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

pytestmark = pytest.mark.reliability


def web_run(path, **data) -> RunConfig:
    return RunConfig.from_dict({"data": {"source": "file", "path": str(path), **data}})


def test_the_web_process_never_reads_a_data_file_whole(data_dir, record_property):
    policy = InputPolicy.for_web(data_dir)
    policy.uploads.mkdir(parents=True)
    many = policy.uploads / "many.parquet"  # 0.3M rows in a file of a few kB
    rows = 300_000
    pq.write_table(pa.table({"prompt": ["1+1?"] * rows, "answer": ["2"] * rows}), many)
    deep = policy.uploads / "deep.jsonl"
    deep.write_text('{"prompt": ' + "[" * 200_000 + "]" * 200_000 + ', "answer": "1"}\n')
    probes = [
        (many, {"split": "train"}, r"data\.max_file_rows: .*more than 100,000 rows"),
        (many, {"split": "all", "max_rows": 10}, r"data\.max_file_rows: .*more than 100,000"),
        (deep, {"split": "all"}, r"data\.path: deep\.jsonl line 1 nests values too deeply"),
    ]
    refused = 0
    tracemalloc.start()
    try:
        for path, data, message in probes:
            with pytest.raises(ConfigError, match=message):
                check_inputs(web_run(path, **data), policy)
            refused += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    record_property("probes_tried", len(probes))
    record_property("probes_passed", refused)
    assert peak < 50 * 2**20, f"{peak / 2**20:.0f} MiB held while checking"


def test_the_worker_counts_rows_while_streaming(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"{i}?", "answer": "1"}) + "\n" for i in range(50))
    )
    with pytest.raises(DatasetError, match=r"max_file_rows: .*more than 20 rows"):
        load_rows(DataSpec(source="file", path=str(path), split="train", max_file_rows=20))
    # split "all" with max_rows reads only the first rows: the rest of the file is not counted
    first = load_rows(
        DataSpec(source="file", path=str(path), split="all", max_rows=5, max_file_rows=20)
    )
    assert [r["answer"] for r in first] == ["1"] * 5
    csv_path = tmp_path / "long.csv"
    csv_path.write_text("prompt,answer\n" + "".join(f'"q {i},\nmore",{i}\n' for i in range(30)))
    with pytest.raises(DatasetError, match=r"max_file_rows: .*more than 20 rows"):
        load_rows(DataSpec(source="file", path=str(csv_path), split="all", max_file_rows=20))
    rows = load_rows(DataSpec(source="file", path=str(csv_path), split="all"))
    assert rows[1]["prompt"][0]["content"] == "q 1,\nmore" and rows[1]["answer"] == "1"


def test_a_worker_over_the_memory_cap_is_ended_with_a_message(data_dir):
    # A real process that holds ~300 MiB stands in for a run's worker (its own session, as the
    # launcher starts workers).
    hog = subprocess.Popen(
        [sys.executable, "-c", "import time; x = bytearray(300 * 2**20); time.sleep(300)"],
        start_new_session=True,
    )
    try:
        with Database(db_path(data_dir)) as db:
            run_store.create_run(db, run_id="hog", algorithm="grpo", config={})
            run_store.update_run(
                db, "hog", status=RunStatus.RUNNING, pid=hog.pid, started_at=time.time()
            )
            deadline = time.monotonic() + 60
            launcher = Launcher(data_dir, max_worker_bytes=100 * 2**20, gpus=lambda: [])
            while launcher.scan() != ["hog"]:  # until the process has touched its memory
                assert time.monotonic() < deadline
                time.sleep(0.2)
            run = run_store.get_run(db, "hog")
        assert run.status == RunStatus.FAILED
        assert "over this app's limit of 100 MiB per run" in run.error_message
        assert hog.wait(timeout=10) == -9
    finally:
        if hog.poll() is None:
            hog.kill()
            hog.wait()
