"""Completions sent to ``/score_preview``: texts, or tool rollouts as lists of turns.

A tool rollout is scored as the trainer hands it to the reward (TRL 1.16's completion of a
run with tools, :mod:`rewards.completions.tool_calls`): assistant turns (``content``, and
``tool_calls`` of ``{"type": "function", "function": {"name", "arguments"}}``) and ``tool``
turns (``content``: the result). Every part is bounded before anything is scored, since a
visitor writes it: the number of turns and calls, each text's length and encoding, and the
arguments, a flat mapping of names to plain values (a nested one could be arbitrarily deep) or
a JSON text.
"""

from __future__ import annotations

from typing import Any

from rewards.params import describe_value, text_problem

MAX_TURNS = 16
MAX_CALLS_PER_TURN = 8
MAX_ARGUMENTS = 16
MAX_NAME_CHARS = 64
TURN_KEYS = {"role", "content", "tool_calls", "name"}
ROLES = ("assistant", "tool")


class CompletionError(ValueError):
    """A completion the API cannot score; the message names it (``completions[3][1].role``)."""


def completions_chars(completions: Any, max_text_chars: int, max_count: int) -> int:
    """Check ``completions`` (a list of texts or conversations); return their characters.

    Raises:
        CompletionError: naming the first completion, turn or field that is not allowed.
    """
    if not isinstance(completions, list):
        raise CompletionError("completions: must be a list of strings or lists of turns")
    if len(completions) > max_count:
        raise CompletionError(f"completions: at most {max_count} per call")
    return sum(
        _completion(f"completions[{i}]", c, max_text_chars) for i, c in enumerate(completions)
    )


def _completion(where: str, value: Any, limit: int) -> int:
    if isinstance(value, str):
        return _text(where, value, limit)
    if not isinstance(value, list):
        raise CompletionError(
            f"{where}: must be a string or a list of turns, got {describe_value(value)}"
        )
    if not 1 <= len(value) <= MAX_TURNS:
        raise CompletionError(f"{where}: {len(value)} turns; 1 to {MAX_TURNS} allowed")
    return sum(_turn(f"{where}[{k}]", turn, limit) for k, turn in enumerate(value))


def _turn(where: str, turn: Any, limit: int) -> int:
    if not isinstance(turn, dict):
        raise CompletionError(f"{where}: must be a turn (a mapping), got {describe_value(turn)}")
    unknown = sorted(str(k) for k in turn if k not in TURN_KEYS)
    if unknown:
        raise CompletionError(f"{where}: unknown keys {unknown}; allowed: {sorted(TURN_KEYS)}")
    role = turn.get("role", "assistant")
    if role not in ROLES:
        raise CompletionError(f"{where}.role: must be one of {ROLES}, got {describe_value(role)}")
    chars = 0
    if turn.get("content") is not None:
        chars += _text(f"{where}.content", turn["content"], limit)
    if turn.get("name") is not None:
        _name(f"{where}.name", turn["name"])
    calls = turn.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            raise CompletionError(f"{where}.tool_calls: a list, on an assistant turn only")
        if len(calls) > MAX_CALLS_PER_TURN:
            raise CompletionError(
                f"{where}.tool_calls: {len(calls)} calls; at most {MAX_CALLS_PER_TURN} a turn"
            )
        chars += sum(_call(f"{where}.tool_calls[{j}]", c, limit) for j, c in enumerate(calls))
    return chars


def _call(where: str, call: Any, limit: int) -> int:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or call.get("type", "function") != "function":
        raise CompletionError(
            f'{where}: must be {{"type": "function", "function": {{"name", "arguments"}}}}'
        )
    _name(f"{where}.function.name", function.get("name"))
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        return _text(f"{where}.function.arguments", arguments, limit)
    if not isinstance(arguments, dict) or len(arguments) > MAX_ARGUMENTS:
        raise CompletionError(
            f"{where}.function.arguments: a JSON text or a mapping of at most {MAX_ARGUMENTS} "
            "names to strings, numbers, booleans or nulls"
        )
    chars = 0
    for key, value in arguments.items():
        _name(f"{where}.function.arguments", key)
        if isinstance(value, str):
            chars += _text(f"{where}.function.arguments.{key}", value, limit)
        elif value is not None and not isinstance(value, (bool, int, float)):
            raise CompletionError(
                f"{where}.function.arguments.{key}: a string, number, boolean or null, "
                f"got {describe_value(value)}"
            )
    return chars


def _name(where: str, value: Any) -> None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME_CHARS:
        raise CompletionError(f"{where}: must be a name of 1 to {MAX_NAME_CHARS} characters")
    problem = text_problem(value)
    if problem:
        raise CompletionError(f"{where}: {problem}")


def _text(where: str, value: Any, limit: int) -> int:
    if not isinstance(value, str):
        raise CompletionError(f"{where}: must be a string, got {describe_value(value)}")
    if len(value) > limit:
        raise CompletionError(f"{where}: {len(value):,} characters; at most {limit:,} each")
    problem = text_problem(value)  # RE2 and SQLite take UTF-8 only
    if problem:
        raise CompletionError(f"{where}: {problem}")
    return len(value)
