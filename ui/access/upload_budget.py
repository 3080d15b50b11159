"""Disk for Gradio's own upload route (``/gradio_api/upload``), bounded per client and overall.

Gradio caps each file (``max_file_size``) and sweeps its cache of files older than a few hours,
but nothing bounds how much one client uploads in between, or the cache as a whole. This ASGI
middleware refuses an upload, before its body is read, when its ``Content-Length`` would take
the client's uploads within the sweep window over ``per_client`` bytes, or Gradio's upload
folder over ``total`` bytes (HTTP 413, the reason in the body). A client is its visitor cookie
(:func:`ui.access.visitor_cookie.client_key`), or its address when it presents none.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from pathlib import Path

from ui.access.visitor_cookie import ASGIApp, Receive, Scope, Send, answer, client_key

PER_CLIENT_ENV = "STUDIO_MAX_CLIENT_UPLOADS_MB"
TOTAL_ENV = "STUDIO_MAX_GRADIO_UPLOADS_MB"
#: Defaults on a public app (MiB): a visitor's uploads within the window, and all of them.
PUBLIC_PER_CLIENT_MB = 500
PUBLIC_TOTAL_MB = 4096
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


class UploadBudget:
    """ASGI middleware: bounds ``/gradio_api/upload`` per client and overall (module docstring).

    Args:
        app: the wrapped ASGI app.
        folder: Gradio's upload folder (``gradio.utils.get_upload_folder()``).
        per_client: bytes one client may upload within ``window_s`` (``None``: no cap).
        total: bytes the folder may hold (``None``: no cap).
        window_s: how long an upload counts against its client (Gradio's sweep age).
    """

    def __init__(
        self,
        app: ASGIApp,
        folder: Path,
        per_client: int | None,
        total: int | None,
        window_s: float,
    ) -> None:
        self.app = app
        self.folder = Path(folder)
        self.per_client = per_client
        self.total = total
        self.window_s = window_s
        self._sent: OrderedDict[str, deque[tuple[float, int]]] = OrderedDict()
        self._folder_size = (0.0, 0)  # (when counted, bytes)
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
        refusal = self._admit(client_key(scope), length)
        if refusal:
            await answer(send, 413, refusal)
            return
        await self.app(scope, receive, send)

    def _admit(self, client: str, length: int) -> str:
        """``""`` and the upload counted, or why it is refused."""
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
                    f"this app allows ({PER_CLIENT_ENV}); try again later"
                )
            if self.total is not None:
                counted_at, size = self._folder_size
                if now - counted_at > _RECOUNT_S:
                    counted_at, size = now, folder_bytes(self.folder)
                self._folder_size = (counted_at, size)
                if size + length > self.total:
                    return (
                        f"uploads: the server's space for uploads is full "
                        f"({self.total / 2**20:,.0f} MiB, {TOTAL_ENV}); try again later"
                    )
                self._folder_size = (counted_at, size + length)  # until the next walk
            sent.append((now, length))
            self._sent[client] = sent
            self._sent.move_to_end(client)
            while len(self._sent) > _MAX_CLIENTS:
                self._sent.popitem(last=False)
        return ""


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None
            return length if length >= 0 else None
    return None


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
