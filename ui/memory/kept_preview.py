"""The last preview, kept for a reload while its cache is still there (issue 25 item 6).

A preview's completions live in the page's session (a ``gr.State``); a reload starts a new
session. Each generated cache is also kept here, in the server's memory, under a random token
that the browser keeps (``gr.BrowserState``) and that only its owner (the viewer behind the
request) can redeem. The store is small and per process: a restart, or newer previews of other
visitors past :data:`MOST_KEPT`, take a cache away, and the reload then draws nothing.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from rewards.spec import RewardSpec
from ui.access.identity import IdentityError, viewer_for
from ui.preview.cache import PreviewCache
from ui.shared.named_values import Updates, Values

MOST_KEPT = 32  # previews kept in memory: one per visitor, the 32 newest (each bounded by the form)
TOKEN_CHARS = 64  # a kept token is 22 characters; anything longer is no token of ours


class KeptPreviews:
    """Caches by token, newest last; a token opens its cache for its owner only."""

    def __init__(self, most: int = MOST_KEPT) -> None:
        self.most = most
        self._kept: OrderedDict[str, tuple[str, PreviewCache]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, owner: str, cache: PreviewCache) -> str:
        """Keep ``cache`` as ``owner``'s last preview (their earlier one goes: one each, so
        no visitor holds more than one place) and return its token."""
        token = secrets.token_urlsafe(16)
        with self._lock:
            for earlier in [t for t, (o, _) in self._kept.items() if o == owner]:
                del self._kept[earlier]
            self._kept[token] = (owner, cache)
            while len(self._kept) > self.most:
                self._kept.popitem(last=False)
        return token

    def get(self, owner: str, token: Any) -> PreviewCache | None:
        """The cache kept under ``token`` for ``owner`` (None: gone, another's, or no token)."""
        if not isinstance(token, str) or len(token) > TOKEN_CHARS:
            return None
        with self._lock:
            found = self._kept.get(token)
            if found is None or found[0] != owner:
                return None
            self._kept.move_to_end(token)
            return found[1]


KEPT = KeptPreviews()  # one per process: the app's sessions share it


@dataclass
class PreviewHandles:
    """What a reload redraws on the Preview tab: its session's cache and the views of it.

    ``draw(cache, spec)`` gives the values of ``views`` for a cache scored with ``spec``."""

    cache_state: gr.State
    views: list[gr.components.Component]
    draw: Callable[[PreviewCache, RewardSpec], tuple[Any, ...]]


def _owner(request: gr.Request | None, profile: gr.OAuthProfile | None) -> str | None:
    try:
        return viewer_for(request, profile).owner
    except IdentityError:
        return None


def wire_preview_memory(
    preview_tab: gr.Tab,
    preview: PreviewHandles,
    spec_state: gr.State,
    key_prefix: str,
    secret: str | None = None,
    kept: KeptPreviews = KEPT,
) -> None:
    """Each new preview cache is kept and its token stored in the browser; the first opening
    of the Preview tab after a reload puts the cache back and draws it with the reward of the
    moment, while the cache is still kept. (On the tab's opening, not the page's load: the load
    runs many events already, and the tab restored by a reload is opened by a click too.)"""
    store = gr.BrowserState(None, storage_key=key_prefix + "preview", secret=secret)

    def save(
        cache: PreviewCache, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Any:
        owner = _owner(request, profile)
        if cache.empty or owner is None:
            return gr.skip()
        return kept.put(owner, cache)

    preview.cache_state.change(
        save, preview.cache_state, store, api_visibility="private", show_progress="hidden"
    )

    def restore(
        raw: Values, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        skip = {preview.cache_state: gr.skip()}
        if not raw[preview.cache_state].empty or raw[spec_state] is None:
            return skip  # this session has a preview (or the design is being fixed)
        owner = _owner(request, profile)
        cache = kept.get(owner, raw[store]) if owner is not None else None
        if cache is None:
            return skip
        views = preview.draw(cache, raw[spec_state])
        return {preview.cache_state: cache, **dict(zip(preview.views, views, strict=True))}

    preview_tab.select(
        restore,
        inputs={store, spec_state, preview.cache_state},
        outputs=[preview.cache_state, *preview.views],
        api_visibility="private",
        show_progress="hidden",
    )
