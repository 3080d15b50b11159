"""Disk for Gradio's own upload route (``/gradio_api/upload``), bounded per client and overall,
and never blocked by uploads that send nothing or never finish.

Gradio caps each file (``max_file_size``) and sweeps its cache of files older than a few hours,
but nothing bounds how much one client uploads in between, or the cache as a whole. This ASGI
middleware:

- keys a client by its address (:func:`~ui.access.visitor_cookie.client_address`: behind a
  Space's proxy, the hop the proxy appended), so new cookies buy no new share;
- refuses an upload whose ``Content-Length`` would take the client's uploads within the sweep
  window over its share, ``min(per_client, total / SHARES)`` (HTTP 413: a declared length
  can only ever block its own client);
- counts the bytes that actually arrive, not the declared ones, against the folder's ``total``:
  an upload is refused when the folder and the bytes in flight already fill it, and cut off
  (the app sees the client leave) once its own bytes would pass it;
- lets a client hold at most :data:`UPLOADS_AT_ONCE` uploads at once;
- removes the temp files of uploads that were aborted: Gradio writes each upload to a
  ``NamedTemporaryFile(delete=False)`` and leaves it when the client goes away. The web process's
  temp files live in their own folder (:func:`use_incoming_folder`), and files there that no
  one holds open and that have not changed for ``stale_s`` seconds are removed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from pathlib import Path

from ui.access.same_origin import answer
from ui.access.visitor_cookie import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    client_address,
)

logger = logging.getLogger(__name__)

PER_CLIENT_ENV = "STUDIO_MAX_CLIENT_UPLOADS_MB"
TOTAL_ENV = "STUDIO_MAX_GRADIO_UPLOADS_MB"
STALE_ENV = "STUDIO_UPLOAD_STALE_S"
#: Defaults on a public app (MiB): a visitor's uploads within the window, and all of them.
PUBLIC_PER_CLIENT_MB = 500
PUBLIC_TOTAL_MB = 4096
SHARES = 8  # no client holds more than 1/SHARES of the total
UPLOADS_AT_ONCE = 4
DEFAULT_STALE_S = 300.0  # an upload that sent nothing for 5 minutes is gone
_RECOUNT_S = 5.0  # the folder's size is walked at most this often
_MAX_CLIENTS = 100_000


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 when it does not exist)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed meanwhile (the sweep, a move into the cache)
                continue
    return total


def use_incoming_folder(data_dir: Path) -> Path:
    """Make a temp folder of this app (one per data dir, so a restart sweeps what the last run
    left) this process's temp folder, where Gradio streams uploads; its path."""
    digest = hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"studio-incoming-{digest}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Gradio derives its cache folder from the temp folder when GRADIO_TEMP_DIR is unset:
    # keep it where it was, or files it already serves would be refused.
    from gradio.utils import get_upload_folder

    os.environ.setdefault("GRADIO_TEMP_DIR", get_upload_folder())
    tempfile.tempdir = str(folder)
    return folder


def _open_files() -> set[str]:
    """Paths this process holds open (Linux ``/proc``; empty elsewhere: nothing is swept)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return set()
    paths = set()
    for fd in fds:
        try:
            paths.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return paths


def sweep_orphans(folder: Path, stale_s: float, now: float | None = None) -> int:
    """Remove files directly in ``folder`` that no one holds open and that have not changed
    for ``stale_s`` seconds; the bytes removed."""
    if not Path("/proc/self/fd").is_dir():
        return 0  # without /proc an open upload cannot be told from an orphan
    now = time.time() if now is None else now
    held = _open_files()
    removed = 0
    for entry in os.scandir(folder):
        try:
            stat = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not entry.is_file(follow_symlinks=False) or entry.path in held:
            continue
        if now - stat.st_mtime < stale_s:
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            continue
        removed += stat.st_size
    return removed


class UploadBudget:
    """ASGI middleware: bounds ``/gradio_api/upload`` per client and overall (module docstring).

    Args:
        app: the wrapped ASGI app.
        folder: Gradio's upload folder (``gradio.utils.get_upload_folder()``).
        per_client: bytes one client may upload within ``window_s`` (``None``: no cap).
        total: bytes the folder may hold (``None``: no cap).
        window_s: how long an upload counts against its client (Gradio's sweep age).
        incoming: the folder of uploads in flight, swept of orphans (``None``: no sweep).
        stale_s: how long an unheld temp file may sit unchanged in ``incoming``.
    """

    def __init__(
        self,
        app: ASGIApp,
        folder: Path,
        per_client: int | None,
        total: int | None,
        window_s: float,
        incoming: Path | None = None,
        stale_s: float = DEFAULT_STALE_S,
    ) -> None:
        self.app = app
        self.folder = Path(folder)
        share = None if total is None else total // SHARES
        self.per_client = min((c for c in (per_client, share) if c is not None), default=None)
        self.total = total
        self.window_s = window_s
        self.incoming = incoming
        self.stale_s = stale_s
        self._sent: OrderedDict[str, deque[tuple[float, int]]] = OrderedDict()
        self._active: dict[str, int] = {}
        self._in_flight = 0  # bytes received by uploads not finished yet
        self._flight: dict[str, int] = {}  # the same, per client
        self._folder_size = (0.0, 0)  # (when counted, bytes)
        self._swept_at = 0.0
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or not scope.get("path", "").rstrip("/").endswith("/gradio_api/upload")
        ):
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is None:
            await answer(send, 411, "uploads: send the body's Content-Length")
            return
        self._sweep()
        client = client_address(scope, _header(scope, b"x-forwarded-for"))
        refusal = self._admit(client, length)
        if refusal:
            await answer(send, 413, refusal)
            return
        received = 0
        started = cut = False

        async def counted() -> Message:
            nonlocal received, cut
            message = await receive()
            chunk = len(message.get("body", b"")) if message["type"] == "http.request" else 0
            if chunk and not self._take(client, chunk):
                cut = True
                logger.warning("Cut off an upload from %s: over its share or the total", client)
                return {"type": "http.disconnect"}
            received += chunk
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except Exception:
            if not cut:  # the app's own failure; a cut-off upload is answered below
                raise
        finally:
            self._finish(client, received)
        if cut and not started:
            await answer(send, 413, f"uploads: cut off, over your share or {self._full_message()}")

    def _sweep(self) -> None:
        now = time.time()
        with self._lock:
            due = self.incoming is not None and now - self._swept_at > min(60.0, self.stale_s)
            if due:
                self._swept_at = now
        if due:
            removed = sweep_orphans(self.incoming, self.stale_s, now)
            if removed:
                logger.info("Removed %d bytes of aborted uploads", removed)
                with self._lock:
                    self._folder_size = (0.0, 0)  # walk again

    def _admit(self, client: str, length: int) -> str:
        """``""`` and the upload started, or why it is refused."""
        now = time.time()
        with self._lock:
            sent = self._sent.get(client, deque())
            while sent and now - sent[0][0] > self.window_s:
                sent.popleft()
            used = sum(size for _, size in sent)
            if self.per_client is not None and used + length > self.per_client:
                return (
                    f"uploads: {(used + length) / 2**20:,.0f} MiB from you within "
                    f"{self.window_s / 3600:g} h is over the {self.per_client / 2**20:,.0f} MiB "
                    f"this app allows one client ({PER_CLIENT_ENV}); try again later"
                )
            if self._active.get(client, 0) >= UPLOADS_AT_ONCE:
                return f"uploads: you have {UPLOADS_AT_ONCE} uploads under way; wait for them"
            if self.total is not None and self._stored(now) + self._in_flight >= self.total:
                return self._full_message()
            self._active[client] = self._active.get(client, 0) + 1
            self._sent[client] = sent
            self._sent.move_to_end(client)
            while len(self._sent) > _MAX_CLIENTS:
                self._sent.popitem(last=False)
        return ""

    def _stored(self, now: float) -> int:
        if now - self._folder_size[0] > _RECOUNT_S:
            self._folder_size = (now, folder_bytes(self.folder))
        return self._folder_size[1]

    def _take(self, client: str, chunk: int) -> bool:
        """Count ``chunk`` bytes that arrived from ``client``; False when they would pass its
        share (its uploads at once together) or the total."""
        now = time.time()
        with self._lock:
            mine = self._flight.get(client, 0) + chunk
            if self.per_client is not None:
                recent = sum(n for at, n in self._sent.get(client, ()) if now - at <= self.window_s)
                if recent + mine > self.per_client:
                    return False
            if self.total is not None and self._stored(now) + self._in_flight + chunk > self.total:
                return False
            self._in_flight += chunk
            self._flight[client] = mine
            return True

    def _finish(self, client: str, received: int) -> None:
        with self._lock:
            self._in_flight -= received
            left = self._flight.get(client, 0) - received
            if left > 0:
                self._flight[client] = left
            else:
                self._flight.pop(client, None)
            held = self._active.get(client, 1) - 1
            if held > 0:
                self._active[client] = held
            else:
                self._active.pop(client, None)
            self._sent.setdefault(client, deque()).append((time.time(), received))
            # The bytes are in the folder now: count them until the next walk.
            counted_at, size = self._folder_size
            self._folder_size = (counted_at, size + received)

    def _full_message(self) -> str:
        return (
            f"uploads: the server's space for uploads is full "
            f"({(self.total or 0) / 2**20:,.0f} MiB, {TOTAL_ENV}); try again later"
        )


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _content_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length")
    try:
        length = int(value)
    except ValueError:
        return None
    return length if length >= 0 else None


def budget_caps(env: Mapping[str, str], public: bool) -> tuple[int | None, int | None]:
    """``(per_client, total)`` bytes from the environment; defaults on a public app only."""
    from ui.shared.context import positive_int_setting

    per_client = positive_int_setting(env, PER_CLIENT_ENV)
    total = positive_int_setting(env, TOTAL_ENV)
    if public:
        per_client = per_client or PUBLIC_PER_CLIENT_MB
        total = total or PUBLIC_TOTAL_MB
    return (
        None if per_client is None else per_client * 2**20,
        None if total is None else total * 2**20,
    )


def stale_seconds(env: Mapping[str, str]) -> float:
    """``STUDIO_UPLOAD_STALE_S``, else :data:`DEFAULT_STALE_S`."""
    from ui.shared.context import positive_int_setting

    return float(positive_int_setting(env, STALE_ENV) or DEFAULT_STALE_S)
