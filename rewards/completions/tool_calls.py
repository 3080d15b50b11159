"""The tool calls of one rollout, read from the conversation TRL hands the reward functions.

With tools, TRL 1.16's GRPOTrainer passes each completion as the messages of its rollout:
assistant turns (``content``, and ``tool_calls`` when the turn called tools:
``{"type": "function", "function": {"name", "arguments"}}``), each followed by one ``tool``
message per call, in call order, whose content is the tool's result as text, or
``str({"error": message})`` when the call failed (an unknown tool, a tool that raised). A call
whose text did not parse as JSON never becomes a ``tool_calls`` entry: TRL keeps the turn as
plain text, so the ``<tool_call>`` tag stays in the content (:func:`malformed_calls` counts it).

:func:`tool_calls` turns that into numbered :class:`ToolCall` records, which the agent reward
components score and name in their traces ("call 2: calculator('17*3') -> 51").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewards.completions.text import completion_text

#: The tag Qwen2.5/Qwen3-style templates (and the shipped model's) wrap a call in.
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
_ERROR_PREFIX = "{'error': "
_CALL_SHOWN_CHARS = 40


@dataclass(frozen=True)
class ToolCall:
    """One call of a rollout: its 1-based number, what was called and what came back."""

    number: int
    name: str
    arguments: Any
    result: str | None  # None: no result came back (TRL dropped it past the length limit)
    error: str | None

    def describe(self) -> str:
        """``call 2: calculator('17*3') -> 51`` (or ``-> error: ...``, or ``-> no result`` when
        the trainer dropped a result past ``max_completion_length``), cut to stay one line."""
        args = self.arguments
        if isinstance(args, dict):
            shown = ", ".join(_shown(repr(v)) for v in args.values())
        else:
            shown = _shown(repr(args))
        head = f"call {self.number}: {self.name}({shown})"
        if self.error is not None:
            return f"{head} -> error: {_shown(self.error)}"
        if self.result is None:  # TRL drops a result that would pass max_completion_length
            return f"{head} -> no result (out of completion length)"
        return f"{head} -> {_shown(self.result)}"


def is_conversation(completion: Any) -> bool:
    """Whether a completion is a list of messages (TRL's chat form) rather than text."""
    return isinstance(completion, Sequence) and not isinstance(completion, str)


def tool_calls(completion: Any) -> list[ToolCall]:
    """The parsed tool calls of one rollout, numbered in order, each with its result."""
    if not is_conversation(completion):
        return []
    calls: list[tuple[str, Any]] = []
    results: list[tuple[str | None, str | None]] = []
    for message in completion:
        if not isinstance(message, dict):
            continue
        if message.get("role", "assistant") == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function", call) if isinstance(call, dict) else {}
                calls.append((str(function.get("name", "?")), function.get("arguments")))
        elif message.get("role") == "tool":
            results.append(_result(completion_text([{"content": message.get("content")}])))
    out = []
    for i, (name, arguments) in enumerate(calls):
        result, error = results[i] if i < len(results) else (None, None)
        out.append(ToolCall(i + 1, name, arguments, result, error))
    return out


def malformed_calls(completion: Any) -> int:
    """``<tool_call>`` tags left in the assistant text: calls TRL could not parse."""
    return completion_text(completion).count(CALL_OPEN)


def final_text(completion: Any) -> str:
    """The last assistant turn's text: the answer given after the calls."""
    if not is_conversation(completion):
        return completion_text(completion)
    for message in reversed(completion):
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            return completion_text([message])
    return ""


def _result(content: str) -> tuple[str | None, str | None]:
    if not (content.startswith(_ERROR_PREFIX) and content.endswith("}")):
        return content, None
    try:  # TRL writes str({"error": message}); read it back only when it is that small dict
        value = ast.literal_eval(content) if len(content) < 5_000 else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(value, dict) and isinstance(value.get("error"), str):
        return None, value["error"]
    return None, content[len(_ERROR_PREFIX) : -1]


def _shown(text: str) -> str:
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= _CALL_SHOWN_CHARS else text[: _CALL_SHOWN_CHARS - 3] + "..."
