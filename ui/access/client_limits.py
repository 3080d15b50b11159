"""Per-client limits on Gradio's event routes, so one client cannot starve the others.

An ASGI middleware (inside :class:`~ui.access.visitor_cookie.VisitorCookies`, which says who a
client is) that, before Gradio sees a request:

- lets each address send at most :data:`ADDRESS_REQUESTS_PER_S` requests a second on average,
  on every route, in bursts of :data:`ADDRESS_REQUEST_BURST` (a page load and its assets fit
  the burst many times over): a flood of cheap pages, each minting a new cookie, costs the
  web process more than the events it then sends;
- refuses a session hash that is empty or longer than :data:`MAX_SESSION_HASH` characters, or
  holds other than letters, digits, ``-`` and ``_`` (Gradio keeps per-session state keyed by
  it, and answered an empty one with HTTP 500), in a query, a path or an event's body;
- refuses an event body over :data:`MAX_EVENT_BYTES`;
- lets each client start at most ``rate`` events a second on average, in bursts of ``burst``
  (a token bucket: Tanenbaum, *Computer Networks*, 5th ed., §5.4.2), the cheap polls included,
  and open at most :data:`NEW_SESSIONS_PER_S` new sessions a second (Gradio builds state for
  each session, so a new session per event is the expensive flood);
- lets each client hold at most ``max_streams`` open event streams at once;
- counts a call of ``/gradio_api/call/<name>`` as a new session (Gradio makes one per call)
  and its result stream ``GET /gradio_api/call/<name>/<event_id>`` as a stream;
- answers a refusal for rate or streams late (:func:`~ui.access.same_origin.refuse`), so a
  client that retries at once cannot turn refusals into a flood of its own.

A client is its visitor cookie, or its address when it presents none
(:func:`~ui.access.visitor_cookie.client_key`), so a client opening a new session per request
is still one client. A new cookie is free (any ``GET /config`` gives one), so every limit holds
per address too, at :data:`ADDRESS_SHARE` times a client's (a household or an office behind
one address); behind a Space's proxy the address is the hop the proxy appended to
``X-Forwarded-For`` (:func:`~ui.access.visitor_cookie.client_address`). Refusals are HTTP 400,
413 or 429 with the reason.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from urllib.parse import parse_qs

from ui.access.same_origin import answer, refuse
from ui.access.visitor_cookie import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    client_address,
    client_key,
)

logger = logging.getLogger(__name__)

MAX_SESSION_HASH = 64
MAX_EVENT_BYTES = 8 * 2**20  # a config or spec of 1,000,000 characters, JSON-escaped, fits
EVENTS_PER_S_ENV = "STUDIO_CLIENT_EVENTS_PER_S"
# A page fires many events on its own (each step of a .then() chain is one, every input's
# change, the 1 s poll): the event budget is generous; new sessions are what a flood costs.
DEFAULT_EVENTS_PER_S = 20.0
DEFAULT_BURST = 200
DEFAULT_MAX_STREAMS = 24  # a heartbeat and an event stream per tab: a dozen tabs
NEW_SESSIONS_PER_S = 0.5  # a page load or an API client opens one
NEW_SESSIONS_BURST = 10
ADDRESS_SHARE = 4  # an address may use this many clients' limits, however many cookies it takes
# A page load is about a hundred requests at once (its scripts, styles, config, load events);
# then each tab sends a few a second (polls, heartbeats). Four tabs are far below this.
ADDRESS_REQUESTS_PER_S = 50.0
ADDRESS_REQUEST_BURST = 1000
_SESSION_HASH = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_SESSION_HASH}}}")
# A component's server function (the Design editor's check) is an event like any other.
_EVENT_ROUTES = (
    "/gradio_api/queue/join",
    "/gradio_api/call/",
    "/gradio_api/run/",
    "/gradio_api/component_server",
)
_STREAM_ROUTES = ("/gradio_api/queue/data", "/gradio_api/heartbeat/", "/gradio_api/call/")
_CALL_ROUTE = "/gradio_api/call/"  # each call is a session of its own
_MAX_CLIENTS = 100_000


class TokenBucket:
    """Per-key token buckets: ``take(key)`` spends one token if there is one."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            allowed = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > _MAX_CLIENTS:  # the longest idle are full again anyway
                self._buckets.popitem(last=False)
            return allowed


def session_hash_problem(value: object) -> str:
    """Why ``value`` is not a session hash this app takes, or ``""``."""
    if not isinstance(value, str) or not _SESSION_HASH.fullmatch(value):
        return f"session_hash: must be 1 to {MAX_SESSION_HASH} letters, digits, '-' or '_'" + (
            f", got {len(value):,} characters" if isinstance(value, str) else ""
        )
    return ""


class ClientLimits:
    """ASGI middleware: the limits of the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        rate: float = DEFAULT_EVENTS_PER_S,
        burst: int = DEFAULT_BURST,
        max_streams: int = DEFAULT_MAX_STREAMS,
    ) -> None:
        self.app = app
        self.events = TokenBucket(rate, burst)
        # Gradio builds per-session state on a session's first event: a client opening a new
        # session per event costs far more than its events do (a page load opens one).
        self.sessions = TokenBucket(NEW_SESSIONS_PER_S, NEW_SESSIONS_BURST)
        self.address_events = TokenBucket(rate * ADDRESS_SHARE, burst * ADDRESS_SHARE)
        self.address_sessions = TokenBucket(
            NEW_SESSIONS_PER_S * ADDRESS_SHARE, NEW_SESSIONS_BURST * ADDRESS_SHARE
        )
        self.address_requests = TokenBucket(ADDRESS_REQUESTS_PER_S, ADDRESS_REQUEST_BURST)
        self._seen: OrderedDict[str, str] = OrderedDict()  # session hash -> its client
        self.max_streams = max_streams
        self._streams: dict[str, int] = {}
        self._logged: dict[str, float] = {}
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        address = "ip:" + client_address(scope, _header(scope, b"x-forwarded-for"))
        if not self.address_requests.take(address):
            self._refused(address, "requests")
            await refuse(
                send,
                429,
                f"requests: more than {ADDRESS_REQUESTS_PER_S:g} a second from your address; "
                "slow down",
            )
            return
        if "/gradio_api/" not in path:
            await self.app(scope, receive, send)
            return
        problem = _query_or_path_problem(scope, path)
        if problem:
            await answer(send, 400, problem)
            return
        client = client_key(scope)
        if scope.get("method") == "POST" and any(r in path for r in _EVENT_ROUTES):
            if not (self.events.take(client) and self.address_events.take(address)):
                self._refused(client, "events")
                await refuse(
                    send,
                    429,
                    f"events: more than {self.events.rate:g} a second from you; slow down",
                )
                return
            body = await _read_body(receive, MAX_EVENT_BYTES)
            if body is None:
                await answer(send, 413, f"event: the body is over {MAX_EVENT_BYTES:,} bytes")
                return
            session, problem = _body_session(body)
            if problem:
                await answer(send, 400, problem)
                return
            if _CALL_ROUTE in path:
                session = f"call:{id(body)}:{time.monotonic_ns()}"  # never seen before
            if session and not self._known_session(client, address, session):
                self._refused(client, "a new session")
                await refuse(
                    send,
                    429,
                    f"sessions: more than {self.sessions.rate:g} new sessions a second from "
                    "you; reuse your session",
                )
                return
            await self.app(scope, _replay(body, receive), send)
            return
        if scope.get("method") == "GET" and any(r in path for r in _STREAM_ROUTES):
            if not self._open_stream(client, address):
                self._refused(client, "a stream")
                await refuse(
                    send,
                    429,
                    f"streams: you have {self.max_streams} open; close some tabs",
                )
                return
            try:
                await self.app(scope, receive, send)
            finally:
                self._close_stream(client)
                self._close_stream(address)
            return
        await self.app(scope, receive, send)

    def _refused(self, client: str, what: str) -> None:
        """Log a refusal, at most once a minute per client (a flood must not flood the log)."""
        now = time.monotonic()
        with self._lock:
            if now - self._logged.get(client, -60.0) < 60.0:
                return
            self._logged[client] = now
            if len(self._logged) > _MAX_CLIENTS:
                self._logged.clear()
        logger.warning("Refused %s from client %s (429)", what, client[:24])

    def _known_session(self, client: str, address: str, session: str) -> bool:
        """True for a session this client used before, or a new one within its rate and its
        address's."""
        with self._lock:
            if self._seen.get(session) == client:
                self._seen.move_to_end(session)
                return True
        if not (self.sessions.take(client) and self.address_sessions.take(address)):
            return False
        if session.startswith("call:"):
            return True  # a call's session is used once: nothing to remember
        with self._lock:
            self._seen[session] = client
            while len(self._seen) > _MAX_CLIENTS:
                self._seen.popitem(last=False)
        return True

    def _open_stream(self, client: str, address: str) -> bool:
        with self._lock:
            held = self._streams.get(client, 0)
            at_address = self._streams.get(address, 0)
            if held >= self.max_streams or at_address >= self.max_streams * ADDRESS_SHARE:
                return False
            self._streams[client] = held + 1
            self._streams[address] = at_address + 1
            return True

    def _close_stream(self, client: str) -> None:
        with self._lock:
            held = self._streams.get(client, 1) - 1
            if held > 0:
                self._streams[client] = held
            else:
                self._streams.pop(client, None)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _query_or_path_problem(scope: Scope, path: str) -> str:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    for value in query.get("session_hash", []):
        problem = session_hash_problem(value)
        if problem:
            return problem
    if "/gradio_api/heartbeat/" in path:
        return session_hash_problem(path.rsplit("/heartbeat/", 1)[1].strip("/"))
    return ""


def _body_session(body: bytes) -> tuple[str, str]:
    """``(session hash, problem)`` of an event's JSON body (``""`` for none)."""
    try:
        data = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return "", ""  # not JSON: Gradio answers it
    if not isinstance(data, Mapping) or data.get("session_hash") is None:
        return "", ""
    problem = session_hash_problem(data["session_hash"])
    return ("", problem) if problem else (data["session_hash"], "")


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or ``None`` once it passes ``limit`` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body read here, then the server's own messages
    (the client's disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def events_per_s(env: Mapping[str, str]) -> float:
    """``STUDIO_CLIENT_EVENTS_PER_S``, else :data:`DEFAULT_EVENTS_PER_S`."""
    from ui.shared.context import positive_int_setting

    return float(positive_int_setting(env, EVENTS_PER_S_ENV) or DEFAULT_EVENTS_PER_S)
