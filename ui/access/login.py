"""The ``STUDIO_AUTH`` login check, with a rate limit on wrong passwords.

Gradio calls ``launch(auth=...)`` with ``(username, password)`` on every login attempt. This
check compares in constant time (``hmac.compare_digest`` over SHA-256 digests, against every
configured pair, so neither the user name nor the password length shows in the timing), waits
a moment after each failure without blocking the server (an ``async`` check), and refuses
every attempt for a user name that failed ``max_failures`` times within ``window_s`` seconds,
the right password included, until the oldest of those failures leaves the window (the sliding
window of OWASP's "Blocking Brute Force Attacks" guidance).

Gradio passes no client address to the check, so the limit is per user name; guessing across
many names still costs the delay per failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping

from ui.shared.context import SettingsError, positive_int_setting

logger = logging.getLogger(__name__)

MAX_FAILURES_ENV = "STUDIO_LOGIN_MAX_FAILURES"
WINDOW_ENV = "STUDIO_LOGIN_WINDOW_S"
MAX_FAILURES = 5
WINDOW_S = 60.0
FAILURE_DELAY_S = 0.25
MAX_TRACKED_NAMES = 10_000  # bounded memory under a flood of made-up user names


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class LoginGuard:
    """``await guard.check(username, password)``: the ``auth`` callable of ``launch``."""

    def __init__(
        self,
        pairs: Iterable[tuple[str, str]],
        *,
        max_failures: int = MAX_FAILURES,
        window_s: float = WINDOW_S,
        failure_delay_s: float = FAILURE_DELAY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pairs = [(_digest(user), _digest(password)) for user, password in pairs]
        if not self._pairs:
            raise ValueError("pairs: at least one user:password pair is needed")
        self.max_failures = max_failures
        self.window_s = window_s
        self.failure_delay_s = failure_delay_s
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_env(
        cls, pairs: Iterable[tuple[str, str]], env: Mapping[str, str] | None = None
    ) -> LoginGuard:
        env = os.environ if env is None else env
        max_failures = positive_int_setting(env, MAX_FAILURES_ENV) or MAX_FAILURES
        window_s = WINDOW_S
        raw = env.get(WINDOW_ENV, "").strip()
        if raw:
            try:
                window_s = float(raw)
            except ValueError:
                window_s = -1.0
            if not 0 < window_s < 86_400:
                raise SettingsError(WINDOW_ENV, f"must be seconds in (0, 86400), got {raw!r}")
        return cls(pairs, max_failures=max_failures, window_s=window_s)

    def matches(self, username: str, password: str) -> bool:
        """Constant-time check of one pair against every configured pair."""
        user, secret = _digest(username), _digest(password)
        found = False
        for known_user, known_secret in self._pairs:
            same = hmac.compare_digest(user, known_user) & hmac.compare_digest(secret, known_secret)
            found |= same
        return found

    def _recent(self, username: str, now: float) -> deque[float]:
        failures = self._failures.get(username, deque())
        while failures and now - failures[0] >= self.window_s:
            failures.popleft()
        return failures

    def locked(self, username: str) -> bool:
        """True while ``username`` has ``max_failures`` failures within the window."""
        with self._lock:
            return len(self._recent(username, self._clock())) >= self.max_failures

    def _fail(self, username: str) -> None:
        with self._lock:
            now = self._clock()
            failures = self._recent(username, now)
            failures.append(now)
            self._failures[username] = failures
            if len(self._failures) > MAX_TRACKED_NAMES:  # forget the names idle the longest
                for name in sorted(self._failures, key=lambda n: self._failures[n][-1])[
                    : len(self._failures) - MAX_TRACKED_NAMES
                ]:
                    del self._failures[name]

    async def check(self, username: str, password: str) -> bool:
        """True for a configured pair, unless the user name is locked out for now."""
        if self.locked(username):
            logger.warning("Login refused for %r: too many wrong passwords", username[:64])
            await asyncio.sleep(self.failure_delay_s)
            return False
        if self.matches(username, password):
            return True
        self._fail(username)
        await asyncio.sleep(self.failure_delay_s)
        return False
