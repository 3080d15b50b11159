"""The run's tools as one TRL environment per rollout: what a ``tools:`` config section becomes.

TRL 1.16's GRPOTrainer makes one environment per rollout from ``environment_factory``, calls its
``reset(**row)`` before sampling and offers its public methods as tools (their names, type hints
and docstrings become the JSON schema the chat template renders). An environment rather than
plain ``tools=[...]`` functions because two things belong to one rollout: the row's context
column (read by ``lookup``) and the count of calls against ``max_tool_calls``.

Every call goes through :meth:`Toolbox._call`, which ends only that call with a
:class:`ToolError` (TRL sends ``{"error": ...}`` back to the model and counts a failure) when an
argument is too large, the budget is spent, or the tool refuses; results are cut to
``MAX_RESULT_CHARS`` so a tool cannot flood the context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.tools.calculator import calculator as _calculator
from engine.tools.errors import ToolError
from engine.tools.lookup import context_entries, lookup_in
from engine.tools.units import convert_units as _convert_units

MAX_ARGUMENT_CHARS = 1_000
MAX_RESULT_CHARS = 500


class Toolbox:
    """Per-rollout state of the built-in tools; subclasses add the enabled tools as methods."""

    max_calls: int = 4

    def __init__(self) -> None:
        self.calls = 0
        self._entries: dict[str, str] = {}

    def reset(self, **row: Any) -> None:
        """A new rollout of ``row``: its context (the column the data loader carried as
        ``context``), and a fresh call budget."""
        self.calls = 0
        self._entries = context_entries(row.get("context"))

    def _call(self, tool: Callable[..., str], **arguments: Any) -> str:
        self.calls += 1
        if self.calls > self.max_calls:
            raise ToolError(f"the budget of {self.max_calls} tool calls is spent")
        for name, value in arguments.items():
            if isinstance(value, str) and len(value) > MAX_ARGUMENT_CHARS:
                raise ToolError(
                    f"argument {name} has {len(value):,} characters; at most {MAX_ARGUMENT_CHARS:,}"
                )
        return str(tool(**arguments))[:MAX_RESULT_CHARS]


# Each tool as a method, written out so its signature and docstring (TRL's schema) are its own.
def calculator(self, expression: str) -> str:
    """Evaluate an arithmetic expression with + - * / // % ** and parentheses.

    Args:
        expression: The arithmetic to compute, e.g. "17*3" or "(2+3)**2".
    """
    return self._call(_calculator, expression=expression)


def convert_units(self, value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, time, volume or temperature.

    Args:
        value: The amount to convert, e.g. 3.5.
        from_unit: Its unit, e.g. km, mi, kg, lb, h, l, gal, C or F.
        to_unit: The unit wanted, of the same kind.
    """
    return self._call(_convert_units, value=value, from_unit=from_unit, to_unit=to_unit)


def lookup(self, key: str) -> str:
    """Look up the value of a key in this question's context.

    Args:
        key: The name of the entry, e.g. "population".
    """
    return self._call(lambda key: lookup_in(self._entries, key), key=key)


#: Built-in tools by the name the model calls them (and the config lists them).
BUILTIN_TOOLS: dict[str, Callable[..., str]] = {
    "calculator": calculator,
    "convert_units": convert_units,
    "lookup": lookup,
}


def toolbox_class(
    names: list[str], max_calls: int, more: dict[str, Callable[..., str]] | None = None
) -> type[Toolbox]:
    """A :class:`Toolbox` subclass offering exactly the built-in tools ``names`` and the methods
    ``more`` (a user's own tools); the class is TRL's ``environment_factory``."""
    unknown = [n for n in names if n not in BUILTIN_TOOLS]
    if unknown:
        raise ValueError(f"unknown tools {unknown}; built-in: {', '.join(BUILTIN_TOOLS)}")
    attrs: dict[str, Any] = {n: BUILTIN_TOOLS[n] for n in names}
    taken = set(names) | {"reset", "get_reward"} | set(vars(Toolbox))
    clashes = sorted(set(more or {}) & taken)
    if clashes:
        raise ValueError(
            f"tool names {clashes} are taken (enabled built-in tools or the toolbox's)"
        )
    attrs |= more or {}
    attrs["max_calls"] = max_calls
    return type("Toolbox", (Toolbox,), attrs)
