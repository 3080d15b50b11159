"""Runs per client address: an anonymous visitor cannot take every run slot with free cookies.

The caps on queued plus running runs (:mod:`storage.run_caps`) count per owner, and an anonymous
owner is a visitor cookie, which ``GET /config`` hands out for nothing: one script with four
cookies held all of a public app's anonymous run slots. So an anonymous visitor's new run also
counts against its address (behind a Space's proxy, the hop the proxy appended to
``X-Forwarded-For``; :func:`~ui.access.visitor_cookie.client_address`): at most
``STUDIO_DEMO_MAX_RUNS_PER_ADDRESS`` (2 on a public app) queued or running runs started or
resumed from it (runs stopped one by one and resumed together once got past the count).

Signed-in users are not counted here: their identity is not free, and many of them may share
one address (a campus, an office). The runs an address started are kept in this process:
after a restart its earlier runs are interrupted, not active.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping

from storage.run_caps import TooManyActiveRunsError
from ui.shared.settings import is_public, positive_int_setting

MAX_RUNS_PER_ADDRESS_ENV = "STUDIO_DEMO_MAX_RUNS_PER_ADDRESS"
PUBLIC_MAX_RUNS_PER_ADDRESS = 2


def address_cap(env: Mapping[str, str] | None = None) -> int | None:
    """The most active runs one address may have started (``None``: no cap, a private app)."""
    env = os.environ if env is None else env
    value = positive_int_setting(env, MAX_RUNS_PER_ADDRESS_ENV)
    if value is None and is_public(env):
        return PUBLIC_MAX_RUNS_PER_ADDRESS
    return value


class AddressRunSlots:
    """The runs each address started, and the cap on those still queued or running."""

    def __init__(self, cap: int | None, is_active: Callable[[str], bool]) -> None:
        self.cap = cap
        self.is_active = is_active
        self._runs: dict[str, list[str]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()  # guards the two dicts

    def start(self, address: str, start: Callable[[], str]) -> str:
        """``start()`` (which returns the id of the run it made active: a new one, or one
        resumed) if ``address`` has fewer than :attr:`cap` runs for which
        :attr:`is_active` holds; else refuse.

        The count and the start are one critical section per address (a start checks its inputs
        first, which may take seconds), so two calls at once from one address cannot both take
        its last slot, and other addresses do not wait for it.

        Raises:
            TooManyActiveRunsError: the address has its cap of active runs.
        """
        if self.cap is None or not address:
            return start()
        with self._lock:
            lock = self._locks.setdefault(address, threading.Lock())
        with lock:
            active = [r for r in self._runs.get(address, []) if self.is_active(r)]
            if len(active) >= self.cap:
                raise TooManyActiveRunsError(
                    f"runs: {len(active)} queued or running runs were started from your network "
                    f"address, the most this app allows per address ({self.cap}); wait for one "
                    "to finish or stop one, or sign in"
                )
            run_id = start()
            with self._lock:
                self._runs[address] = [*(r for r in active if r != run_id), run_id]
            return run_id
