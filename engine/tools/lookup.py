"""A lookup tool over the row's own context column: the model asks for a key, the tool answers
with its value from that row only (never from other rows, files or the network).

The context is a mapping (a JSON object column) or text of ``key: value`` lines; keys match
case-insensitively with surrounding spaces ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.tools.errors import ToolError

MAX_CONTEXT_ENTRIES = 10_000


def context_entries(context: Any) -> dict[str, str]:
    """The ``key -> value`` entries of one row's context column (empty when it has none)."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        items = list(context.items())[:MAX_CONTEXT_ENTRIES]
        return {_key(k): str(v) for k, v in items}
    entries: dict[str, str] = {}
    for line in str(context).splitlines()[:MAX_CONTEXT_ENTRIES]:
        key, sep, value = line.partition(":")
        if sep and key.strip():
            entries.setdefault(_key(key), value.strip())
    return entries


def lookup_in(entries: Mapping[str, str], key: str) -> str:
    """The value of ``key`` in ``entries``; :class:`ToolError` naming some known keys if absent."""
    if not isinstance(key, str):
        raise ToolError(f"key must be text, got {type(key).__name__}")
    if not entries:
        raise ToolError("this question has no context to look up")
    value = entries.get(_key(key))
    if value is None:
        known = ", ".join(list(entries)[:10])
        raise ToolError(f"no entry {key[:40]!r}; known keys: {known}")
    return value


def _key(key: Any) -> str:
    return " ".join(str(key).split()).lower()
