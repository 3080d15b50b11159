"""Requests from another site are refused: the visitor cookie means "this visitor" only when
the request comes from the app's own page.

On a Space the visitor cookie is ``SameSite=None; Partitioned`` and every Space's frame shares
huggingface.co's partition, so a page in another Space that calls the app with
``credentials: "include"`` carries the victim's cookie; Gradio's CORS middleware answers any
Origin with credentials when the Host is not local. The check here (called by
:class:`~ui.access.visitor_cookie.VisitorCookies` before anything else, on every route) uses
what only the browser writes, never a page script, so a cross-site page cannot forge it:

- ``Sec-Fetch-Site`` (Fetch Metadata, W3C): ``cross-site`` or ``same-site`` is refused, except
  a ``GET``/``HEAD`` navigation (the Space's frame loading the page, a link being followed),
  whose answer the other site cannot read;
- ``Origin``: it must name the request's own ``Host`` (a browser sets ``Host`` to the site it
  asks, so an attacker's page cannot make them match; a client that forges both sends no
  visitor's cookie but its own). ``Origin: null`` (a sandboxed frame, a file) is refused.

``X-Forwarded-Host`` is never read: a cross-site page may add any header Gradio's CORS
preflight lets through. Requests with neither header (``gradio_client``, curl) pass: they carry
only their own cookies.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import urlsplit

from ui.access.own_address import strip_address_headers

Scope = MutableMapping[str, Any]

_FOREIGN_SITES = ("cross-site", "same-site")
_READ_ONLY = ("GET", "HEAD")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def cross_site_problem(scope: Scope) -> str:
    """Why the request comes from another site than the app's page, or ``""``."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        text = name.decode("latin-1").lower()
        if text in ("origin", "host", "sec-fetch-site", "sec-fetch-mode"):
            found.setdefault(text, value.decode("latin-1").strip())
    site = found.get("sec-fetch-site", "").lower()
    navigation = (
        found.get("sec-fetch-mode", "").lower() == "navigate"
        and scope.get("method", "GET") in _READ_ONLY
    )
    if site in _FOREIGN_SITES and not navigation:
        return f"cross-site request refused: Sec-Fetch-Site is {site}; use the app's own page"
    origin = found.get("origin")
    if origin is None:
        return ""
    if not _same_host(origin, found.get("host", "")):
        shown = origin[:100]
        return f"cross-site request refused: Origin {shown!r} is not this app's; use its own page"
    return ""


def _same_host(origin: str, host: str) -> bool:
    """True when ``origin`` (``scheme://host[:port]``) names ``host`` (``host[:port]``)."""
    if not origin or origin == "null" or not host:
        return False
    try:
        asked = urlsplit(origin)
        own = urlsplit(f"{asked.scheme}://{host}")
        asked_port = asked.port or _DEFAULT_PORTS.get(asked.scheme)
        own_port = own.port or _DEFAULT_PORTS.get(asked.scheme)
    except ValueError:
        return False
    return (
        asked.scheme in _DEFAULT_PORTS
        and bool(asked.hostname)
        and asked.hostname == own.hostname
        and asked_port == own_port
    )


# Gradio 6.27+'s routes that act on the Hub with the operator's saved token for a caller it
# takes for local (CVE-2026-134825: a forged Host passes that check); the app uses none of them.
CREDENTIAL_ROUTES = ("/gradio_api/run-history",)


def refused_route(path: str) -> bool:
    """Whether ``path`` is one of :data:`CREDENTIAL_ROUTES` (or below one)."""
    return any(path == route or path.startswith(route + "/") for route in CREDENTIAL_ROUTES)


# A refusal costs the server almost nothing but the client can repeat it at once: answered
# this late, a client that retries at once is slowed to one request per connection and delay,
# for the price of a sleeping coroutine here (the dev-reload flood of bench/flood.py sent
# 62,491 instant 404s in a minute and slowed another visitor's page load to 2.7 s).
REFUSAL_DELAY_S = 1.0


async def refuse(send: Any, status: int, detail: str) -> None:
    """:func:`answer` after :data:`REFUSAL_DELAY_S`: for refusals a flood could repeat."""
    await asyncio.sleep(REFUSAL_DELAY_S)
    await answer(send, status, detail)


async def answer(send: Any, status: int, detail: str) -> None:
    """Answer a request here, before the app: ``status`` with ``{"detail": detail}``."""
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class CrossSiteShield:
    """ASGI wrapper outside Gradio's own CORS middleware: a request from another site (a CORS
    preflight included) is answered 403 here, so no answer to it carries Gradio's
    ``Access-Control-Allow-Origin: <their origin>`` with ``Allow-Credentials: true``.
    :class:`~ui.access.visitor_cookie.VisitorCookies` refuses the same requests inside Gradio;
    this only keeps Gradio from vouching for them. It also answers the
    :data:`CREDENTIAL_ROUTES` 404, whoever asks, and drops the headers a client could name
    the app's address with (:mod:`ui.access.own_address`)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        http = scope["type"] == "http"
        if scope["type"] in ("http", "websocket"):
            strip_address_headers(scope)
        if http and refused_route(scope.get("path", "")):
            await refuse(send, 404, "not found")
            return
        refusal = cross_site_problem(scope) if http else ""
        if not refusal:
            await self.app(scope, receive, send)
            return
        await refuse(send, 403, refusal)


def shield(server_app: Any) -> None:
    """Put :class:`CrossSiteShield` outside a started Gradio server's middleware stack.

    Gradio adds its CORS middleware outside every middleware an app passes it, and builds the
    stack at its first request (its own start-up check), so the shield wraps the built stack.
    """
    stack = server_app.middleware_stack or server_app.build_middleware_stack()
    server_app.middleware_stack = CrossSiteShield(stack)
