"""The app's own address never comes from what a client writes in its request.

Gradio builds the address it puts in ``/config``'s ``root`` (the page's API calls and file
links go there) and in ``/logout``'s redirect from ``X-Forwarded-Host``, else
``X-Gradio-Server``, else ``Host``. A client that sets them is echoed, and a cache in front of
the app that does not key on them would serve the forged address to every visitor. So:

- ``X-Forwarded-Host`` and ``X-Gradio-Server`` are removed from every request before Gradio
  sees it (:func:`strip_address_headers`). SSR, the only user of ``X-Gradio-Server``, is off; a
  proxy that rewrites the host names the public address in :data:`PUBLIC_URL_ENV` instead.
- Where the app knows its public address (:func:`public_url`: ``STUDIO_PUBLIC_URL``, else the
  Space's ``https://$SPACE_HOST``), it is Gradio's ``root_path``, which Gradio then uses as it
  is, reading no header at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from ui.shared.settings import SettingsError

PUBLIC_URL_ENV = "STUDIO_PUBLIC_URL"
# Hugging Face sets it on every Space: the Space's own host, e.g. "team-studio.hf.space".
SPACE_HOST_ENV = "SPACE_HOST"
ADDRESS_HEADERS = (b"x-forwarded-host", b"x-gradio-server")


def public_url(env: Mapping[str, str] | None = None) -> str | None:
    """The app's public address (``scheme://host[:port][/path]``), or None where it is not known.

    Raises:
        SettingsError: ``STUDIO_PUBLIC_URL`` is not an http(s) address.
    """
    env = os.environ if env is None else env
    given = env.get(PUBLIC_URL_ENV, "").strip()
    if given:
        parts = urlsplit(given)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise SettingsError(
                PUBLIC_URL_ENV,
                f"must be an http(s) address such as https://studio.example.org, "
                f"got {given[:100]!r}",
            )
        return given.rstrip("/")
    host = env.get(SPACE_HOST_ENV, "").strip()
    return f"https://{host}" if host and "/" not in host else None


def strip_address_headers(scope: MutableMapping[str, Any]) -> None:
    """Remove :data:`ADDRESS_HEADERS` from an ASGI request ``scope`` in place."""
    headers = scope.get("headers") or []
    if any(name.lower() in ADDRESS_HEADERS for name, _ in headers):
        scope["headers"] = [(n, v) for n, v in headers if n.lower() not in ADDRESS_HEADERS]
