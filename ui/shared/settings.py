"""The app's settings from the environment: public or private, on a Space, and the checked
reading of a number setting (:class:`SettingsError` names the variable)."""

from __future__ import annotations

import os
from collections.abc import Mapping

PUBLIC_ENV = "STUDIO_PUBLIC"
SPACE_ENV = "SPACE_ID"


def on_space(env: Mapping[str, str] | None = None) -> bool:
    """True when the app runs on a Hugging Face Space."""
    env = os.environ if env is None else env
    return bool(env.get(SPACE_ENV, "").strip())


def is_public(env: Mapping[str, str] | None = None) -> bool:
    """True for a public app: on a Space, or with ``STUDIO_PUBLIC=1``."""
    env = os.environ if env is None else env
    return on_space(env) or env.get(PUBLIC_ENV, "").strip().lower() in ("1", "true", "yes")


class SettingsError(ValueError):
    """An environment variable of the app holds a value it cannot use; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def positive_int_setting(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(float(raw))
    except ValueError:
        raise SettingsError(name, f"must be a positive whole number, got {raw!r}") from None
    if value < 1:
        raise SettingsError(name, f"must be a positive whole number, got {raw!r}")
    return value


def sign_in_available(env: Mapping[str, str] | None = None) -> bool:
    """True when Gradio serves "Sign in with Hugging Face" for real: on a Space (its ``SYSTEM``
    and ``SPACE_ID``) with OAuth on (``hf_oauth: true`` sets ``OAUTH_CLIENT_ID``). Elsewhere
    Gradio mocks the sign-in with the machine's own Hugging Face login, and without one the app
    would not start; a Space-like start (``SPACE_ID`` alone) gets anonymous visitors only."""
    env = os.environ if env is None else env
    return (
        on_space(env)
        and env.get("SYSTEM", "") == "spaces"
        and bool(env.get("OAUTH_CLIENT_ID", "").strip())
    )
