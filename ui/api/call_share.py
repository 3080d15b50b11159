"""Slow endpoints serve each client one call at a time, so one client cannot queue everyone
else behind its calls.

``/compare_specs`` and ``/rescore_run`` run for up to their scoring deadlines and share a few
workers; a client that sends a hundred of them would hold every worker for minutes. With
:class:`OnePerClient` a client's second call, started while its first still runs, is answered
at once with an error naming the endpoint, and the worker goes on to the next client's call.
A client is its address (behind a Space's proxy, the hop the proxy appended to
``X-Forwarded-For``), since a new visitor cookie costs nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ui.access.visitor_cookie import request_address
from ui.api.errors import ApiError


class OnePerClient:
    """At most one running call of endpoint ``name`` per client address."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._running: set[str] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self, request: Any) -> Iterator[None]:
        key = request_address(request)
        with self._lock:
            if key in self._running:
                raise ApiError(
                    f"{self.name}: you have a call of it running; wait for its answer first "
                    "(one at a time per client)"
                )
            self._running.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(key)
