"""Refused values described for error messages: short, always printable, never a payload.

Standard library only: the exported reward module (:mod:`rewards.export`) includes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Integers beyond this size are refused before any arithmetic or formatting touches them
#: (Python refuses to print integers over 4,300 digits, and float() overflows past 1e308).
MAX_ABS_INT = 10**18
#: How much of a refused value an error message quotes.
SHOWN_CHARS = 60


def describe_value(value: Any) -> str:
    """A short, always-printable description of a refused value for an error message.

    Strings and reprs are cut to ``SHOWN_CHARS``; huge integers and containers are described
    by size, so formatting the message can never fail or echo a large payload back.
    """
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        if abs(value) > MAX_ABS_INT:
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
        return repr(value)
    if isinstance(value, str):
        text = repr(value[:SHOWN_CHARS])
        return text + (
            f" (+{len(value) - SHOWN_CHARS} more characters)" if len(value) > SHOWN_CHARS else ""
        )
    if isinstance(value, Mapping | list | tuple | set):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"
