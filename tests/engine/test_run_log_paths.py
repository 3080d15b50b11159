"""The run's log, as the Runs view and the run's export show it, names no server path: a path
inside the data dir reads relative to it, tracebacks included (issue 40: a public app shows
visitors no server path)."""

from __future__ import annotations

import logging

from engine.tracking.recorder import StorageLogHandler
from storage import runs as run_store
from storage.export import export_run
from storage.paths import db_path
from storage.records.logs import logs_since
from storage.sqlite.db import Database


def test_paths_inside_the_data_dir_are_logged_relative_to_it(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    checkpoint = data_dir / "runs" / "grpo-1" / "checkpoint-3"
    with Database(db_path(data_dir)) as db:
        run_store.create_run(db, run_id="grpo-1", algorithm="grpo", config={})
        handler = StorageLogHandler(db, "grpo-1", data_dir=tmp_path / "data" / ".." / "data")
        logger = logging.getLogger("test_run_log_paths")
        logger.addHandler(handler)
        try:
            logger.warning("Removing the unfinished checkpoint folder %s", checkpoint)
            try:
                open(checkpoint / "missing.json")  # noqa: SIM115
            except OSError:
                logger.exception("Could not read %s", data_dir)
        finally:
            logger.removeHandler(handler)
            handler.flush()
        lines = [entry.message for entry in logs_since(db, "grpo-1")[0]]
        exported = (export_run(db, "grpo-1", tmp_path / "export") / "logs.txt").read_text()

    assert lines[0] == "Removing the unfinished checkpoint folder runs/grpo-1/checkpoint-3"
    assert lines[1].startswith("Could not read .\nTraceback")
    assert "runs/grpo-1/checkpoint-3/missing.json" in lines[1]
    for text in [*lines, exported]:
        assert str(data_dir) not in text and str(tmp_path) not in text, text
