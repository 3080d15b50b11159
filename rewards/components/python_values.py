"""What a user's ``reward()`` returned, read alike wherever it ran.

Each item is a finite number, ``None`` (not scored) or a ``(score, why)`` pair whose ``why`` is
cut to :data:`MAX_WHY_CHARS`; anything else, or a list of the wrong length, fails the whole
batch with one message naming the component. The app's python component reads the values its
child process sent back as JSON; the exported module (:mod:`rewards.export`) reads those its
importing process computed. Both go through :func:`read_values`, so they give the same scores
and reasons. Standard library only (the exported module includes it).
"""

from __future__ import annotations

import math
from typing import Any

from rewards.components.base import Judgement
from rewards.input_guards.describe import describe_value

#: Longest explanation kept from a ``(score, why)`` pair.
MAX_WHY_CHARS = 200


class UserCodeError(RuntimeError):
    """The user's reward function failed on a batch; the message names the component."""


def read_values(name: str, values: Any, count: int) -> list[Judgement]:
    """One judgement per completion from ``values``; raises :class:`UserCodeError`."""
    if hasattr(values, "tolist"):  # a numpy array, as JSON would carry it
        values = values.tolist()
    if isinstance(values, tuple):
        values = list(values)
    if not isinstance(values, list) or len(values) != count:
        got = f"{len(values)} values" if isinstance(values, list) else describe_value(values)
        raise UserCodeError(
            f"python component {name!r}: reward() must return a list of {count} "
            f"scores (one per completion), got {got}"
        )
    return [_judgement(name, i, item) for i, item in enumerate(values)]


def _judgement(name: str, index: int, item: Any) -> Judgement:
    why = ""
    if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], str):
        item, why = item[0], item[1][:MAX_WHY_CHARS]
    if hasattr(item, "tolist") and not isinstance(item, bool | int | float):
        item = item.tolist()  # a numpy number, as JSON would carry it
    if item is None:
        return Judgement(None, why or "not scored (your function returned None)")
    if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
        raise UserCodeError(
            f"python component {name!r}: item {index} is {describe_value(item)}; each item must "
            "be a finite number, None, or a (score, why) pair"
        )
    return Judgement(float(item), why or f"your function: {float(item):.4g}")
