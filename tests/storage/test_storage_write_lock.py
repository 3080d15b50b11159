"""Writes take SQLite's write lock up front (``BEGIN IMMEDIATE``): a transaction that reads and
then writes waits its turn instead of failing with "database is locked" or losing an update."""

from __future__ import annotations

import threading
import time

from sqlalchemy import select, update

from storage.runs import create_run, get_run
from storage.sqlite.db import Database
from storage.sqlite.schema import Run

WRITERS = 4


def test_concurrent_read_then_write_transactions_neither_fail_nor_lose_updates(data_dir):
    # No retries: a deferred transaction whose snapshot went stale would fail at once.
    db = Database(data_dir / "studio.db", lock_retries=0)
    run_id = create_run(db, algorithm="grpo", config={}).id

    def increment(session) -> None:
        step = session.execute(select(Run.last_step).where(Run.id == run_id)).scalar_one()
        time.sleep(0.2)  # the other writers read meanwhile, unless the lock was taken first
        session.execute(update(Run).where(Run.id == run_id).values(last_step=step + 1))

    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def writer() -> None:
        start.wait()
        try:
            db.write(increment)
        except BaseException as exc:  # recorded for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert get_run(db, run_id).last_step == WRITERS  # no increment was lost
    db.close()
