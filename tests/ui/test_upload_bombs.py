"""Small files that decode to a lot cannot take the web process's memory: each file of a bomb
set is uploaded and checked by the running public app over HTTP (the Train tab's data file,
as a browser sends it), and the app's resident memory (psutil, sampled every 20 ms during the
check) stays within :data:`RSS_BOUND_MB` of what it used before."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.ui.http_session import Browser

pytestmark = pytest.mark.reliability

#: Most the web process may grow while checking any one bomb (it grew 1,600 MB before).
RSS_BOUND_MB = 250


def repeated_text(text: str, rows: int) -> pa.DictionaryArray:
    """``rows`` copies of ``text`` as one dictionary entry and ``rows`` indices: the Parquet
    file a plain column of the copies makes, written without building the copies (a plain
    4 GB column took 25 s to write)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, np.int32)), pa.array([text]))


def write_plain_schema(columns: dict[str, pa.Array], path: Path) -> Path:
    """A Parquet file whose schema says plain strings (no Arrow schema stored, so a reader
    decodes the dictionary-encoded pages into strings, as for any writer's file)."""
    pq.write_table(pa.table(columns), path, compression="zstd", store_schema=False)
    return path


def bomb_set(folder: Path) -> dict[str, Path]:
    """Files of a few KB to 30 MB that decode to hundreds of MB to GB."""
    files = {}
    # 99,000 rows of one 10,000-character string, dictionary-encoded: 990 MB decoded.
    files["dictionary"] = write_plain_schema(
        {"prompt": repeated_text("x" * 10_000, 99_000)}, folder / "dictionary.parquet"
    )
    # One row group of 20 columns of the same kind: 200 KB per row.
    files["wide"] = write_plain_schema(
        {f"c{i}": repeated_text("y" * 10_000, 20_000) for i in range(20)}, folder / "wide.parquet"
    )
    path = folder / "empty-objects.json"  # 30 MB of [{},{},...]: ten million dicts
    path.write_text("[" + ",".join(["{}"] * 10_000_000) + "]")
    files["empty-objects"] = path
    path = folder / "nested-lists.json"  # one object holding ten million empty lists
    path.write_text('[{"prompt": [' + ",".join(["[]"] * 10_000_000) + "]}]")
    files["nested-lists"] = path
    path = folder / "lines.jsonl"  # one JSONL line of ten million empty lists
    path.write_text('{"prompt": [' + ",".join(["[]"] * 10_000_000) + "]}\n")
    files["lines"] = path
    return files


def peak_rss(process: psutil.Process, during) -> tuple[int, object]:
    """``(peak resident bytes, result)`` of ``during()``, sampling ``process`` every 20 ms."""
    peak = process.memory_info().rss
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = during()
    finally:
        done.set()
        sampler.join()
    return max(peak, process.memory_info().rss), result


def check_as_uploaded(browser: Browser, path: Path) -> str:
    uploaded = browser.http.post(
        "/gradio_api/upload", files={"files": (path.name, path.read_bytes())}
    )
    uploaded.raise_for_status()
    server_path = uploaded.json()[0]
    value = {"path": server_path, "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}
    target = browser.component("train-data-file")["id"]
    return json.dumps(browser._event([target, "change"], [value]))


def test_no_file_of_the_bomb_set_takes_the_web_process_memory(start_app, tmp_path, record_property):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    files = bomb_set(tmp_path)
    with start_app(data_dir, {"STUDIO_PUBLIC": "1"}) as app:
        process = psutil.Process(app.process.pid)
        browser = Browser(app.url)
        small = tmp_path / "small.jsonl"
        small.write_text('{"prompt": "1+1", "answer": "2"}\n')
        assert "rows read" in check_as_uploaded(browser, small)  # pyarrow & co. imported
        check_as_uploaded(browser, files["dictionary"])  # and pyarrow's Parquet reader
        grown = {}
        for name, path in files.items():
            before = process.memory_info().rss
            peak, shown = peak_rss(process, lambda p=path: check_as_uploaded(browser, p))
            grown[name] = round((peak - before) / 2**20)
            print(f"{name}: {path.stat().st_size / 1e6:.2f} MB file, +{grown[name]} MB, {shown}")
        record_property("rss_grown_mb", json.dumps(grown))
        assert max(grown.values()) <= RSS_BOUND_MB, grown
