"""Who is asking: the :class:`Viewer` behind each Gradio event, the owner of the runs it makes.

The owner key comes from the server side of the request only, never from a value the client
sends, in this order:

1. a Hugging Face sign-in (Gradio's OAuth on a Space, ``gr.OAuthProfile``): ``hf:<username>``;
2. a ``STUDIO_AUTH`` login (``request.username``): ``user:<login>``;
3. a public app (on a Space, ``SPACE_ID`` set, or ``STUDIO_PUBLIC=1``) without either: an
   anonymous identity per browser, ``anon:<key>``, with the demo caps. The key is a hash of a
   random token in a cookie the server signs and the page cannot read or write
   (:mod:`ui.access.visitor_cookie`), so a reload keeps the visitor's runs and no link, query
   parameter or component value can hand a browser someone else's identity. An API client
   keeps the cookie of its first answer (``gradio_client`` does) and presents it again; one
   that presents none gets a new identity per request, and may not start runs
   (:meth:`Viewer.check_may_own_runs`);
4. a private local app: the single local owner ``local``, also the owner of CLI runs.

Owner keys listed in ``STUDIO_ADMINS`` (comma-separated, e.g. ``hf:alice,user:bob``) see and act
on every run. Everyone else sees only their own runs; another user's run reads exactly like a
run that does not exist. On a public app non-admins have caps on queued plus running runs: per
owner (``STUDIO_DEMO_MAX_QUEUED_RUNS``) and, since a visitor can open any number of sessions,
for all anonymous visitors together (``STUDIO_DEMO_MAX_ANON_RUNS``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import gradio as gr

from storage.run_caps import ActiveRunCaps
from storage.sqlite.schema import ANONYMOUS_PREFIX, LOCAL_OWNER
from ui.access.visitor_cookie import COOKIE_NAME, request_address, vouched_key
from ui.shared.context import is_public, positive_int_setting
from ui.shared.settings import sign_in_available

ADMINS_ENV = "STUDIO_ADMINS"
MAX_ACTIVE_RUNS_ENV = "STUDIO_DEMO_MAX_QUEUED_RUNS"
MAX_ANON_RUNS_ENV = "STUDIO_DEMO_MAX_ANON_RUNS"
# Defaults on a public app: one owner may queue the next run while one trains; anonymous
# visitors together may hold a few, so signed-in users are not crowded out.
PUBLIC_MAX_ACTIVE_RUNS = 2
PUBLIC_MAX_ANON_RUNS = 4


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
        new: an anonymous request that presented no visitor cookie (it was given one now).
        address: an anonymous visitor's client address: its runs count per address too
            (:mod:`ui.access.run_slots`); ``""`` for everyone else.
    """

    owner: str
    name: str
    is_admin: bool = False
    caps: ActiveRunCaps = field(default_factory=ActiveRunCaps)
    new: bool = False
    address: str = ""

    @property
    def scope(self) -> str | None:
        """The owner filter of run queries: ``None`` (every run) for an admin."""
        return None if self.is_admin else self.owner

    @property
    def anonymous(self) -> bool:
        return self.owner.startswith(ANONYMOUS_PREFIX)

    def check_may_own_runs(self) -> None:
        """Refuse a run to a client that could never reach it again: an anonymous request
        without the visitor cookie would give the run an owner nobody can present.

        Raises:
            IdentityError: naming the cookie and how to keep it.
        """
        if self.new:
            raise IdentityError(
                f"runs: this public app gives runs to the visitor cookie {COOKIE_NAME!r} it "
                "sets, and this request sent none; load the app (or GET /config) first and "
                "send that cookie back with every call (gradio_client does this itself)"
            )


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
    if sign_in_available(env):
        return note + (
            " Without signing in they belong to this browser (clearing its site data loses "
            "them): sign in with Hugging Face to keep them on any device."
        )
    return note + " They belong to this browser (clearing its site data loses them)."


def viewer_for(
    request: gr.Request | None,
    profile: gr.OAuthProfile | None = None,
    env: Mapping[str, str] | None = None,
) -> Viewer:
    """The viewer of one Gradio event (see the module docstring for the order).

    Raises:
        IdentityError: a public app got an event the visitor cookie middleware did not see.
    """
    env = os.environ if env is None else env
    new, address = False, ""
    username = getattr(profile, "username", None) if profile is not None else None
    login = getattr(request, "username", None) if request is not None else None
    if username:
        owner, name = f"hf:{username}", str(username)
    elif login:
        owner, name = f"user:{login}", str(login)
    elif is_public(env):
        key, new = vouched_key(getattr(request, "headers", None) if request is not None else None)
        if key is None:
            raise IdentityError(f"this public app knows visitors by its {COOKIE_NAME!r} cookie")
        owner, name = f"{ANONYMOUS_PREFIX}{key}", "anonymous visitor"
        address = request_address(request)
    else:
        owner, name = LOCAL_OWNER, "local"
    is_admin = owner in admins(env)
    return Viewer(
        owner=owner,
        name=name,
        is_admin=is_admin,
        caps=ActiveRunCaps() if is_admin else run_caps(env),
        new=new,
        address="" if is_admin else address,
    )
