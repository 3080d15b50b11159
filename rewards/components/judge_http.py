"""The judge's OpenAI-compatible endpoint: only addresses and key variables the operator listed,
no redirects, a bounded reply (see :mod:`rewards.components.judge`)."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

JUDGE_URLS_ENV = "STUDIO_JUDGE_URLS"


JUDGE_KEYS_ENV = "STUDIO_JUDGE_KEYS"


#: Key variables a spec may name without the operator listing them.
DEFAULT_KEY_ENVS = ("OPENAI_API_KEY",)


def _listed(name: str, env: Mapping[str, str] | None) -> list[str]:
    raw = (os.environ if env is None else env).get(name, "")
    return [item.strip() for item in raw.split(",") if item.strip()]


def allowed_url(url: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``url`` lies under one of the operator's ``STUDIO_JUDGE_URLS`` prefixes.

    Compared parsed, not as text: a bare ``https://judge.example`` must not admit
    ``https://judge.example.evil.net`` or ``https://judge.example@evil.net`` (where the request
    would go), so the scheme and host:port must be the prefix's and the path must continue the
    prefix's path at a ``/``; no user part, no ``..`` segments.
    """
    try:
        got = urlsplit(url)
    except ValueError:
        return False
    if got.scheme not in ("http", "https") or "@" in got.netloc or "\\" in url:
        return False
    if any(part in (".", "..") for part in got.path.split("/")):
        return False
    for prefix in _listed(JUDGE_URLS_ENV, env):
        try:
            want = urlsplit(prefix)
        except ValueError:
            continue
        base = want.path.rstrip("/")
        if (got.scheme, got.netloc.lower()) == (want.scheme, want.netloc.lower()) and (
            got.path.rstrip("/") == base or got.path.startswith(base + "/")
        ):
            return True
    return False


def allowed_key_env(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether a spec may name ``name`` as the judge's key variable: ``OPENAI_API_KEY`` or one
    the operator lists in ``STUDIO_JUDGE_KEYS``."""
    return name in allowed_key_envs(env)


def allowed_key_envs(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The key variables a spec may name: ``OPENAI_API_KEY`` and the operator's list."""
    return (*DEFAULT_KEY_ENVS, *_listed(JUDGE_KEYS_ENV, env))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: following one would carry the key to an unchecked address."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post_chat(url: str, body: dict[str, Any], key: str | None, timeout_s: float) -> str:
    """One OpenAI-compatible chat completion; the reply's text (raises on any failure)."""
    request = urllib.request.Request(
        url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {key}"} if key else {}),
        },
        method="POST",
    )
    # the URL was checked against the operator's STUDIO_JUDGE_URLS when the spec was validated
    with _OPENER.open(request, timeout=timeout_s) as reply:
        data = json.loads(reply.read(1_000_000))
    return str(data["choices"][0]["message"]["content"])
