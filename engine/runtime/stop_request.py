"""A stop request: SIGTERM or SIGINT asks a run to finish its step, save and stop.

Only the standard library here, so the worker can install the handlers before its heavy imports
(torch, transformers: seconds): a stop sent while it starts still ends the run as ``stopped``.
"""

from __future__ import annotations

import signal
import threading
from typing import Any


class StopRequest:
    """Set from a signal handler; trainers turn it into "save, then stop" at a step end."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


def install_stop_handlers(stop: StopRequest) -> None:
    """Route SIGTERM (the launcher's stop) and SIGINT (Ctrl-C) to ``stop``.

    The handler only sets the request: it runs between two bytecodes of the main thread, which
    may be inside a database write, and a line logged from there was stored by a second write
    that waited on the first forever (the run stayed "stopping…" holding the write lock). The
    step end that acts on the request says so in the log.
    """

    def handler(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
