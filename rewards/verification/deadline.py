"""A time budget for one scoring call, shared by the slow components (math-verify, language).

The web app scores inside ``with call_deadline(seconds):``; a component with slow work checks
:func:`deadline_passed` between pieces of it and reports what it could not finish as "cannot
score" (``None``). Outside such a block (training, the CLI) nothing is cut off. The budget is a
context variable, so it follows the calling thread (Gradio runs each request in its own).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "scoring_deadline", default=None
)


@contextlib.contextmanager
def call_deadline(seconds: float) -> Iterator[None]:
    """Give the scoring done inside the block ``seconds`` in all (``time.monotonic`` clock)."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def deadline_at() -> float | None:
    """The ``time.monotonic()`` instant the current call must end by, or None (no budget)."""
    return _DEADLINE.get()


def deadline_passed() -> bool:
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() >= deadline
