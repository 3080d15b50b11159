"""Deletes from the Runs view that wait out an undo window before anything is removed.

A confirmed delete is scheduled, not done: for :data:`UNDO_WINDOW_S` seconds the run and its files
stay untouched and Undo cancels it. If the app stops inside the window, nothing is deleted (a
lost undo is better than lost data). The API's ``/delete_run`` deletes at once, as scripts expect.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)

UNDO_WINDOW_S = 10.0


class PendingDeletes:
    """Scheduled deletes by run id, each done by its own callable when its window ends."""

    def __init__(self, window_s: float = UNDO_WINDOW_S) -> None:
        self.window_s = window_s
        self._timers: dict[str, threading.Timer] = {}
        self._lock = threading.Lock()

    def schedule(self, run_id: str, delete: Callable[[], object]) -> None:
        """Call ``delete()`` when the window ends unless undone (scheduling the same run again
        restarts its window)."""
        timer = threading.Timer(self.window_s, self._fire, args=(run_id, delete))
        timer.daemon = True
        with self._lock:
            old = self._timers.pop(run_id, None)
            if old is not None:
                old.cancel()
            self._timers[run_id] = timer
        timer.start()

    def cancel(self, run_id: str | None) -> bool:
        """Undo: True if a delete of ``run_id`` was waiting and will not happen."""
        with self._lock:
            timer = self._timers.pop(run_id, None) if isinstance(run_id, str) else None
        if timer is None:
            return False
        timer.cancel()
        return True

    def pending(self, run_id: str | None) -> bool:
        with self._lock:
            return run_id in self._timers

    def _fire(self, run_id: str, delete: Callable[[], object]) -> None:
        with self._lock:
            if self._timers.pop(run_id, None) is None:  # undone meanwhile
                return
        try:
            delete()
        except Exception:  # the run changed in the window (resumed, already deleted)
            logger.exception("Scheduled delete of run %s failed", run_id)
