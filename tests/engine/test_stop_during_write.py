"""A stop signal, or a log line, that lands while the worker's main thread is inside a database
write: the write finishes, the stop is kept and the line is stored at the next flush.

The signal handler used to log, and the run's log handler stored that line with a second write
from the same thread, which waited on the lock its own first write held, logging a retry
warning that it stored the same way: a stopped run stayed "stopping…" holding the write lock,
and every other writer of the database (the app, other runs) waited behind it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

WORKER_LIKE = textwrap.dedent(
    """
    import logging, os, signal, sys, time
    from sqlalchemy import text
    from engine.runtime.stop_request import StopRequest, install_stop_handlers
    from engine.tracking.recorder import StorageLogHandler
    from storage import runs as run_store
    from storage.records.logs import logs_since
    from storage.sqlite.db import Database

    db = Database(sys.argv[1], busy_timeout_s=1.0, lock_retries=1)
    run_id = run_store.create_run(db, algorithm="grpo", config={}).id
    logging.getLogger().addHandler(StorageLogHandler(db, run_id, flush_seconds=0))
    logging.getLogger().setLevel(logging.INFO)
    log = logging.getLogger("engine.run.worker")
    stop = StopRequest()
    install_stop_handlers(stop)

    def write(session):
        session.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the write lock is this thread's
        log.info("logged inside a write")
        os.kill(os.getpid(), signal.SIGTERM)  # the launcher's stop, mid-write
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:  # the handler runs between these bytecodes
            pass
        return run_store.get_run(db, run_id)

    db.write(write)
    log.info("logged after it")
    rows, _ = logs_since(db, run_id)
    print("stop set:", stop.is_set())
    print("stored:", [r.message for r in rows])
    """
)


def test_a_stop_signal_during_a_database_write_neither_hangs_nor_is_lost(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WORKER_LIKE, str(tmp_path / "studio.db")],
        capture_output=True,
        text=True,
        timeout=60,  # before the fix it never ended
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "stop set: True" in done.stdout, done.stdout
    assert "stored: ['logged inside a write', 'logged after it']" in done.stdout, done.stdout
