"""The visitor cookie: an anonymous visitor's identity, issued and checked by the server.

A public app without a sign-in knows a browser by one cookie, ``studio_visitor``, that only the
server writes: a random token and its HMAC-SHA256 under a server secret (RFC 2104; the secret is
``STUDIO_COOKIE_SECRET`` or a file in the data dir, so cookies outlive a restart). The cookie is
``HttpOnly`` (page scripts cannot read it), ``SameSite=Lax`` over plain HTTP, and over HTTPS
``SameSite=None; Secure; Partitioned``, which a Space needs inside huggingface.co's frame while
the partition keeps another site's frame of the app from reaching the visitor's cookie.

:class:`VisitorCookies` is an ASGI middleware on the Gradio app. On every HTTP request it checks
the cookie, issues a new one when it is missing or forged, and hands the verified owner to the
event handlers as the header :data:`OWNER_HEADER`, vouched for with a key that lives only in this
process (a client that sends that header itself is ignored: the header is replaced). Nothing a
page, a link, a query parameter or a component value carries takes part. It also turns Gradio's
deep links off: ``/gradio_api/deep_link`` answers 404 and a ``deep_link`` query parameter is
dropped, since a deep link replays one session's component values into another browser. A
request from another site's page is refused first (:mod:`ui.access.same_origin`). On a public
app it answers 404 for Gradio's ``/monitoring`` pages too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import secrets
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ui.access.same_origin import cross_site_problem, refuse

COOKIE_NAME = "studio_visitor"
SECRET_ENV = "STUDIO_COOKIE_SECRET"
SECRET_FILE = "visitor-cookie.key"
#: The verified owner key of the request, ``<key>.<mac>``: written by the middleware only.
OWNER_HEADER = "x-studio-visitor"
#: Present (``1``) when the request carried no valid cookie and was given a new one.
NEW_HEADER = "x-studio-visitor-new"
MAX_AGE_S = 400 * 86_400  # the longest lifetime browsers keep (Chrome caps cookies at 400 days)
_TOKEN_BYTES = 32
_OURS = (OWNER_HEADER.encode(), NEW_HEADER.encode())  # a client's own copies are dropped
# Vouches for OWNER_HEADER between the middleware and the handlers of this one process.
_PROCESS_KEY = secrets.token_bytes(32)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def server_secret(data_dir: Path, env: Mapping[str, str] | None = None) -> bytes:
    """The key that signs visitor cookies: ``STUDIO_COOKIE_SECRET``, else a random key made once
    in the data dir (mode 0600), so a restart of the app keeps its visitors."""
    env = os.environ if env is None else env
    configured = env.get(SECRET_ENV, "").strip()
    if configured:
        return configured.encode()
    path = Path(data_dir) / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip().encode()
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32))
    return path.read_text().strip().encode()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _mac(key: bytes, text: str) -> str:
    return _b64(hmac.new(key, text.encode(), hashlib.sha256).digest())


def issue(secret: bytes) -> tuple[str, str]:
    """``(cookie value, token)`` of a new visitor."""
    token = _b64(secrets.token_bytes(_TOKEN_BYTES))
    return f"{token}.{_mac(secret, token)}", token


def verify(secret: bytes, value: str | None) -> str | None:
    """The token of a cookie value the server signed, else ``None``."""
    if not value or value.count(".") != 1 or len(value) > 200:
        return None
    token, mac = value.split(".")
    return token if hmac.compare_digest(mac, _mac(secret, token)) else None


def owner_key(token: str) -> str:
    """The owner key of a visitor token: a hash, so the database never holds the secret."""
    return hashlib.sha256(f"visitor:{token}".encode()).hexdigest()[:32]


def vouch(key: str) -> str:
    return f"{key}.{_mac(_PROCESS_KEY, key)}"


def vouched_key(headers: Mapping[str, str] | Any) -> tuple[str | None, bool]:
    """``(owner key, new)`` the middleware wrote into a request's headers; ``(None, False)``
    when it wrote none (then nothing vouches for the request)."""
    value = new = None
    for name, text in _header_items(headers):
        if name == OWNER_HEADER:
            value = text
        elif name == NEW_HEADER:
            new = text
    if not value or value.count(".") != 1:
        return None, False
    key, mac = value.split(".")
    if not hmac.compare_digest(mac, _mac(_PROCESS_KEY, key)):
        return None, False
    return key, new == "1"


def _header_items(headers: Any) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items = headers.items() if hasattr(headers, "items") else vars(headers).items()
    return [(str(k).lower(), str(v)) for k, v in items]


def _cookie_value(raw_headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in raw_headers:
        if name.lower() == b"cookie":
            jar = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:
                continue
            if COOKIE_NAME in jar:
                return jar[COOKIE_NAME].value
    return None


def _https(scope: Scope) -> bool:
    if scope.get("scheme") == "https":
        return True
    for name, value in scope.get("headers", []):
        if name.lower() == b"x-forwarded-proto":
            return value.decode("latin-1").split(",")[0].strip().lower() == "https"
    return False


def set_cookie_header(value: str, https: bool) -> str:
    flags = "SameSite=None; Secure; Partitioned" if https else "SameSite=Lax"
    return f"{COOKIE_NAME}={value}; Path=/; Max-Age={MAX_AGE_S}; HttpOnly; {flags}"


class VisitorCookies:
    """ASGI middleware: every HTTP request carries a server-issued visitor identity (see the
    module docstring); Gradio's deep links are off."""

    def __init__(self, app: ASGIApp, secret: bytes, closed: tuple[str, ...] = ()) -> None:
        self.app = app
        self.secret = secret
        self.closed = closed  # path prefixes answered 404 (a public app's /monitoring)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        # Before any route, the cookie included: another site's page never acts as a visitor.
        refusal = cross_site_problem(scope)
        if refusal:
            await refuse(send, 403, refusal)
            return
        if path.rstrip("/").endswith("/gradio_api/deep_link"):
            await refuse(send, 404, "deep links are turned off on this app")
            return
        if any(path == p or path.startswith(p + "/") for p in self.closed):
            await refuse(send, 404, "not served on this app")
            return
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _OURS]
        value = _cookie_value(headers)
        token = verify(self.secret, value)
        new = token is None
        if new:
            value, token = issue(self.secret)
        headers.append((OWNER_HEADER.encode(), vouch(owner_key(token)).encode()))
        if new:
            headers.append((NEW_HEADER.encode(), b"1"))
        scope = {**scope, "headers": headers, "query_string": _without_deep_link(scope)}
        # A new cookie, and on each page load the same one again, so it lasts MAX_AGE_S from
        # the visitor's last visit.
        renew = new or (scope.get("method") == "GET" and scope.get("path", "").endswith("/"))
        cookie = set_cookie_header(value, _https(scope)).encode()

        async def send_with_cookie(message: Message) -> None:
            if renew and message["type"] == "http.response.start":
                extra = [*message.get("headers", []), (b"set-cookie", cookie)]
                message = {**message, "headers": extra}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def _without_deep_link(scope: Scope) -> bytes:
    raw = scope.get("query_string", b"")
    if b"deep_link" not in raw:
        return raw
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    return urlencode([(k, v) for k, v in pairs if k != "deep_link"]).encode("latin-1")


def client_key(scope: Scope) -> str:
    """Who sends a request, for per-client limits: its visitor (the owner key this middleware
    vouched for) when it presented its cookie, else its address (a client that keeps no
    cookie gets a new visitor per request, so its address is what stays the same)."""
    found = {OWNER_HEADER: "", NEW_HEADER: "", "x-forwarded-for": ""}
    for name, value in scope.get("headers", []):
        text = name.decode("latin-1").lower()
        if text in found:
            found[text] = value.decode("latin-1")
    key, new = vouched_key(found)
    if key and not new:
        return f"visitor:{key}"
    return f"address:{client_address(scope, found['x-forwarded-for'])}"


def client_address(scope: Scope, forwarded: str = "") -> str:
    """The client's address: behind a proxy on this machine or network (a Space's), the last
    hop the proxy appended to ``X-Forwarded-For``; a direct client's own address otherwise
    (a direct client could write any ``X-Forwarded-For`` it likes)."""
    host = (scope.get("client") or ("", 0))[0] or ""
    try:
        behind_proxy = ipaddress.ip_address(host).is_private
    except ValueError:
        behind_proxy = False
    if forwarded and behind_proxy:
        return forwarded.split(",")[-1].strip() or host
    return host


def request_address(request: Any) -> str:
    """The client address of a ``gr.Request`` (``""`` without one)."""
    if request is None:
        return ""
    host = getattr(getattr(request, "client", None), "host", "") or ""
    headers = getattr(request, "headers", None) or {}
    forwarded = headers.get("x-forwarded-for", "") if hasattr(headers, "get") else ""
    return client_address({"client": (host, 0)}, forwarded)
