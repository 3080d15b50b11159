"""How an API call fails: :class:`ApiError` names the argument, and the client gets its message
as a ``gr.Error`` (never a traceback)."""

from __future__ import annotations

import functools

import gradio as gr

from ui.access.identity import IdentityError


class ApiError(ValueError):
    """A request the API cannot serve; the message names the argument."""


def as_gradio_error(fn):
    """Report ``ApiError`` to the client as a ``gr.Error`` (its message, no traceback)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ApiError, IdentityError) as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    return wrapped
