"""Who is asking: the :class:`Viewer` behind each Gradio event, the owner of the runs it makes.

The owner key comes from the server side of the request only, never from a value the client
sends, in this order:

1. a Hugging Face sign-in (Gradio's OAuth on a Space, ``gr.OAuthProfile``): ``hf:<username>``;
2. a ``STUDIO_AUTH`` login (``request.username``): ``user:<login>``;
3. a public app (on a Space, ``SPACE_ID`` set, or ``STUDIO_PUBLIC=1``) without either: an
   anonymous identity per browser, ``anon:<key>``, with the demo caps. The key is a hash of a
   random token the server gives the browser on its first visit, kept in the browser's local
   storage (``gr.BrowserState``) and handed back on each page load (:func:`remember_visitor`),
   so a reload keeps the visitor's runs; a client that runs no page load (the API) is
   ``anon:<session hash>`` per session;
4. a private local app: the single local owner ``local``, also the owner of CLI runs.

Owner keys listed in ``STUDIO_ADMINS`` (comma-separated, e.g. ``hf:alice,user:bob``) see and act
on every run. Everyone else sees only their own runs; another user's run reads exactly like a
run that does not exist. On a public app non-admins have caps on queued plus running runs: per
owner (``STUDIO_DEMO_MAX_QUEUED_RUNS``) and, since a visitor can open any number of sessions,
for all anonymous visitors together (``STUDIO_DEMO_MAX_ANON_RUNS``).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from storage.run_caps import ActiveRunCaps
from storage.schema import ANONYMOUS_PREFIX, LOCAL_OWNER
from ui.shared.context import is_public, on_space, positive_int_setting

ADMINS_ENV = "STUDIO_ADMINS"
MAX_ACTIVE_RUNS_ENV = "STUDIO_DEMO_MAX_QUEUED_RUNS"
MAX_ANON_RUNS_ENV = "STUDIO_DEMO_MAX_ANON_RUNS"
# Defaults on a public app: one owner may queue the next run while one trains; anonymous
# visitors together may hold a few, so signed-in users are not crowded out.
PUBLIC_MAX_ACTIVE_RUNS = 2
PUBLIC_MAX_ANON_RUNS = 4
#: Where the browser keeps the visitor token (local storage key of the ``gr.BrowserState``).
VISITOR_STORAGE_KEY = "reward-studio-visitor"
_VISITOR_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
_MAX_SESSIONS = 100_000  # sessions remembered (oldest forgotten: they reload and are re-told)
_visitor_keys: OrderedDict[str, str] = OrderedDict()
_visitor_lock = threading.Lock()


class IdentityError(PermissionError):
    """The request carries no identity the app can give runs to."""


@dataclass(frozen=True)
class Viewer:
    """The user behind one event.

    Attributes:
        owner: the owner key stored with the runs this user starts.
        name: what the page calls the user.
        is_admin: sees and acts on every run.
        caps: the caps on queued plus running runs that a new run of this user must fit.
    """

    owner: str
    name: str
    is_admin: bool = False
    caps: ActiveRunCaps = field(default_factory=ActiveRunCaps)

    @property
    def scope(self) -> str | None:
        """The owner filter of run queries: ``None`` (every run) for an admin."""
        return None if self.is_admin else self.owner

    @property
    def anonymous(self) -> bool:
        return self.owner.startswith(ANONYMOUS_PREFIX)


LOCAL_VIEWER = Viewer(LOCAL_OWNER, "local")


def admins(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The owner keys of ``STUDIO_ADMINS``."""
    env = os.environ if env is None else env
    return frozenset(k.strip() for k in env.get(ADMINS_ENV, "").split(",") if k.strip())


def _cap(env: Mapping[str, str], name: str, public_default: int) -> int | None:
    value = positive_int_setting(env, name)
    if value is None and is_public(env):
        return public_default
    return value


def run_caps(env: Mapping[str, str] | None = None) -> ActiveRunCaps:
    """The caps of non-admins on queued plus running runs, from the environment (defaults on a
    public app: :data:`PUBLIC_MAX_ACTIVE_RUNS` per owner, :data:`PUBLIC_MAX_ANON_RUNS` for all
    anonymous visitors together; none on a private app)."""
    env = os.environ if env is None else env
    return ActiveRunCaps(
        per_owner=_cap(env, MAX_ACTIVE_RUNS_ENV, PUBLIC_MAX_ACTIVE_RUNS),
        anonymous_total=_cap(env, MAX_ANON_RUNS_ENV, PUBLIC_MAX_ANON_RUNS),
    )


def ownership_note(env: Mapping[str, str] | None = None) -> str:
    """What the page header tells visitors of a public app about whose runs they see."""
    env = os.environ if env is None else env
    if not is_public(env):
        return ""
    note = "Your runs are visible only to you."
    if on_space(env):
        return note + (
            " Without signing in they belong to this browser (clearing its site data loses "
            "them): sign in with Hugging Face to keep them on any device."
        )
    return note + " They belong to this browser (clearing its site data loses them)."


def remember_visitor(session_hash: str, token: object) -> str:
    """Tie a browser session to the visitor token its browser kept; returns the token to keep
    (a new one when ``token`` is missing or malformed). The owner key is a hash of the token,
    so the database never holds the secret."""
    if not isinstance(token, str) or not _VISITOR_TOKEN.fullmatch(token):
        token = secrets.token_urlsafe(32)
    key = _owner_key("visitor", token)
    with _visitor_lock:
        _visitor_keys[session_hash] = key
        _visitor_keys.move_to_end(session_hash)
        while len(_visitor_keys) > _MAX_SESSIONS:
            _visitor_keys.popitem(last=False)
    return token


def _owner_key(kind: str, secret: str) -> str:
    # Keys of the two kinds never meet: a client picks its session hash freely, but cannot pick
    # one whose hash equals that of a browser's token without knowing the token.
    return hashlib.sha256(f"{kind}:{secret}".encode()).hexdigest()[:32]


def anonymous_owner(session_hash: str) -> str:
    """The owner key of an anonymous session: its browser's token when the page load handed it
    back (:func:`remember_visitor`), else the session itself (an API client)."""
    with _visitor_lock:
        key = _visitor_keys.get(session_hash)
    return f"{ANONYMOUS_PREFIX}{key or _owner_key('session', session_hash)}"


def browser_state_secret(data_dir: Path) -> str:
    """The key Gradio encrypts the visitor token with in the browser, kept in the data dir so
    tokens survive a restart of the app."""
    path = Path(data_dir) / "browser-state.key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


def viewer_for(
    request: gr.Request | None,
    profile: gr.OAuthProfile | None = None,
    env: Mapping[str, str] | None = None,
) -> Viewer:
    """The viewer of one Gradio event (see the module docstring for the order).

    Raises:
        IdentityError: a public app got an event without a browser session.
    """
    env = os.environ if env is None else env
    username = getattr(profile, "username", None) if profile is not None else None
    login = getattr(request, "username", None) if request is not None else None
    if username:
        owner, name = f"hf:{username}", str(username)
    elif login:
        owner, name = f"user:{login}", str(login)
    elif is_public(env):
        session = getattr(request, "session_hash", None) if request is not None else None
        if not session:
            raise IdentityError("this public app needs a browser session to know whose runs")
        owner, name = anonymous_owner(session), "anonymous visitor"
    else:
        owner, name = LOCAL_OWNER, "local"
    is_admin = owner in admins(env)
    return Viewer(
        owner=owner,
        name=name,
        is_admin=is_admin,
        caps=ActiveRunCaps() if is_admin else run_caps(env),
    )
