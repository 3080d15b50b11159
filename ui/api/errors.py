"""How an API call fails: :class:`ApiError` names the argument, and the client gets its message
as a ``gr.Error`` (never a traceback)."""

from __future__ import annotations

import functools
import logging

import gradio as gr

from ui.access.identity import IdentityError

logger = logging.getLogger(__name__)


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
        except gr.Error:
            raise
        except Exception as exc:
            # A check that missed a shape of input: the client gets an error naming the
            # endpoint (Gradio would answer `error: null`), the log the traceback.
            name = fn.__name__.removesuffix("_endpoint")
            logger.exception("API endpoint %s failed on its input", name)
            raise gr.Error(
                f"{name}: this input could not be handled ({type(exc).__name__}); check the "
                "arguments against the endpoint's description in the API page",
                print_exception=False,
            ) from None

    return wrapped
