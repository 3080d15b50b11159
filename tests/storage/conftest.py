"""Fixtures of the storage tests: a fresh studio database in the test's data dir."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from storage.paths import db_path
from storage.sqlite.db import Database


@pytest.fixture
def db(data_dir):
    database = Database(db_path(data_dir))
    yield database
    database.close()


@pytest.fixture
def hold_write_lock():
    """``hold(path, seconds)``: another connection takes the write lock of ``path`` for
    ``seconds`` (in a thread); returns the thread once the lock is held. Joined at teardown."""
    threads: list[threading.Thread] = []

    def hold(path, seconds: float) -> threading.Thread:
        held = threading.Event()

        def run() -> None:
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                held.set()
                time.sleep(seconds)
                conn.execute("ROLLBACK")
            finally:
                conn.close()

        thread = threading.Thread(target=run)
        thread.start()
        held.wait(timeout=30)
        threads.append(thread)
        return thread

    yield hold
    for thread in threads:
        thread.join()
