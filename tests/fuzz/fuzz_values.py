"""Hostile values for the fuzz tests: what an outside user can send through a form or the API.

Leaves include the cases that broke parsing before (4,300-digit integers, lone surrogates, NUL
bytes, NaN, huge strings); containers nest them; :func:`mutated` plants one of them at a random
field of an otherwise valid document, so validation is reached field by field.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Cases per target. The default run draws 1,000 (the same ones every time: derandomized), enough
#: for every hostile leaf to land at many fields; bench/reliability_report.py sets
#: FUZZ_MAX_EXAMPLES=10000 for the campaign RELIABILITY.md reports.
MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "1000"))
FUZZ_SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,  # the same cases on every run: a CI failure reproduces locally
    suppress_health_check=list(HealthCheck),
)

HOSTILE_TEXTS = [
    "",
    " ",
    "\ud800",
    "a\x00b",
    '"""',
    "\\",
    "\n" * 3,
    "[" * 2000,
    "x" * 20_000,
    "../../etc/passwd",
    "/etc/passwd",
    "~",
    "${HOME}",
    "{{7*7}}",
    "\u202e",
    "1e999",
    "nan",
    "-0",
]
HOSTILE_TEXT = st.sampled_from(HOSTILE_TEXTS)
# Huge integers are built by a function: a literal one would break hypothesis's own reprs.
SMALL_NUMBERS = [2**64, -1, 0, 1, float("nan"), float("inf"), -float("inf"), 1e308, 0.5]
HOSTILE_NUMBERS = st.one_of(
    st.sampled_from(SMALL_NUMBERS),
    st.sampled_from([4301, 10_000]).map(lambda digits: 10**digits),
    st.sampled_from([4301]).map(lambda digits: -(10**digits)),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    HOSTILE_TEXT,
    HOSTILE_NUMBERS,
)
JSON_LIKE = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=10), st.integers()), children, max_size=4),
    ),
    max_leaves=6,  # one hostile leaf per case is the point; big trees only cost generation
)


def hostile_leaves() -> list[Any]:
    """Every fixed hostile leaf the strategies draw from, for a grid that plants each at every
    field: which cases a drawn run reaches depends on what hypothesis has imported (its draws
    mix in the loaded modules' constants), a grid does not."""
    huge = [10**4301, 10**10_000, -(10**4301)]
    return [None, True, False, [], {}, *HOSTILE_TEXTS, *SMALL_NUMBERS, *huge]


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into ``doc`` (dict keys and list indices), the root included."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += paths(value, (*prefix, i))
    return out


def mutated(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """``base`` with one value (at a random path) replaced, or a key added, or deleted."""
    return st.builds(_mutate, st.just(base), st.sampled_from(paths(base)), _EDITS)


_EDITS = st.tuples(
    st.sampled_from(["replace", "replace", "add", "delete"]),
    st.one_of(st.text(max_size=10), HOSTILE_TEXT),
    JSON_LIKE,
)


def planted(base: dict[str, Any], path: tuple, value: Any) -> Any:
    """``base`` with the value at ``path`` replaced by ``value`` (``base`` untouched)."""
    return _mutate(base, path, ("replace", "", value))


def _mutate(base: dict[str, Any], path: tuple, edit: tuple[str, Any, Any]) -> Any:
    action, new_key, value = edit
    if not path:
        return value
    doc = parent = _shallow(base)
    for key in path[:-1]:  # copy only the containers on the path: the base stays untouched
        parent[key] = _shallow(parent[key])
        parent = parent[key]
    if action == "replace":
        parent[path[-1]] = value
    elif action == "add" and isinstance(parent, dict):
        parent[new_key] = value
    elif isinstance(parent, dict):
        del parent[path[-1]]
    return doc


def _shallow(container: Any) -> Any:
    return dict(container) if isinstance(container, dict) else list(container)


def as_text(value: Any) -> str:
    """A fuzzed value as JSON text (what API clients send; NaN and Infinity included), or a
    5,000-digit number where the value holds one that Python refuses to print."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except ValueError:
        return "9" * 5000


def check_message(exc: BaseException) -> None:
    """A rejection's message is short, printable text (it never echoes a large payload)."""
    text = str(exc)
    assert len(text) < 3000, text[:200]
    text.encode("utf-8")
