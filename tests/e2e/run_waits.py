"""Polling the run table until a worker gets somewhere: the e2e tests' one way to wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from storage import runs as run_store
from storage.paths import db_path
from storage.runs import RunInfo
from storage.sqlite.db import Database


def run_status(data_dir: Path, run_id: str) -> RunInfo | None:
    """The run's row as the database holds it now."""
    with Database(db_path(data_dir)) as db:
        return run_store.get_run(db, run_id)


def wait(predicate: Callable[[], Any], timeout: float = 120.0, what: str = "", every=0.3) -> Any:
    """``predicate()``'s first truthy value, polled every ``every`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for(
    data_dir: Path, run_id: str, predicate: Callable[[RunInfo], bool], timeout: float = 240.0
) -> RunInfo:
    """The run's row once ``predicate`` holds; on a timeout the error shows the row and the
    worker log's tail."""
    seen: list[RunInfo | None] = [None]

    def reached() -> RunInfo | None:
        seen[0] = run_status(data_dir, run_id)
        return seen[0] if predicate(seen[0]) else None

    try:
        return wait(reached, timeout, every=0.2)
    except AssertionError:
        log = data_dir / "runs" / run_id / "worker.log"
        tail = log.read_text()[-3000:] if log.exists() else ""
        raise AssertionError(f"timed out; run={seen[0]}; log tail:\n{tail}") from None
