"""Turning what a trainer hands a reward function into plain text, with bounded size.

TRL passes completions as strings for plain prompts and as a list of messages
(``[{"role": "assistant", "content": "..."}]``) for chat prompts; content may itself be a list of
typed parts (``[{"type": "text", "text": "..."}]``). Every component reads text through
:func:`completion_text`, so all of them accept both forms. Prompts are read by three helpers, one
per question asked of them: the whole conversation (:func:`prompt_text`: stored samples, the
judge), what the user asked (:func:`question_text`: the Preview, the Playground's picker) and
its system message (:func:`system_text`: what the Playground and ``engine generate`` reuse).
Each takes a string, a chat (messages whose content may be typed parts), or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Longest completion any component looks at, in characters. Longer texts are cut to their first
#: ``MAX_COMPLETION_CHARS`` characters before scoring, which bounds the work one request can cause.
MAX_COMPLETION_CHARS = 200_000


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # typed parts: [{"type": "text", "text": ...}, ...]
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


def completion_text(completion: Any) -> str:
    """The text of one completion: a string, or the assistant messages of a chat completion joined.

    Messages without a role count as assistant messages; other roles (tool results) are skipped.
    The result is cut to :data:`MAX_COMPLETION_CHARS` characters.
    """
    if isinstance(completion, str):
        text = completion
    elif isinstance(completion, dict):
        text = _content_text(completion.get("content"))
    elif isinstance(completion, Sequence):
        text = "".join(
            _content_text(m.get("content"))
            for m in completion
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant"
        )
    elif completion is None:
        text = ""
    else:
        text = str(completion)
    return text[:MAX_COMPLETION_CHARS]


def completion_texts(completions: Sequence[Any]) -> list[str]:
    """:func:`completion_text` for a batch."""
    return [completion_text(c) for c in completions]


def _messages(prompt: Sequence[Any]) -> list[dict[str, Any]]:
    return [m for m in prompt if isinstance(m, dict)]


def prompt_text(prompt: Any) -> str:
    """A whole prompt as text: a string as it is, a chat as one ``role: content`` line per
    message (the form stored samples keep, system prompt included); None as ""."""
    if prompt is None:
        return ""
    if isinstance(prompt, str) or not isinstance(prompt, Sequence):
        return str(prompt)
    return "\n".join(
        f"{m.get('role', '')}: {_content_text(m.get('content'))}" for m in _messages(prompt)
    )


def question_text(prompt: Any) -> str:
    """What the user asked: a string as it is, else a chat's last user message (all its
    messages' contents when no message is the user's); None as ""."""
    if prompt is None:
        return ""
    if isinstance(prompt, str) or not isinstance(prompt, Sequence):
        return str(prompt)
    contents = [(m.get("role"), _content_text(m.get("content"))) for m in _messages(prompt)]
    users = [text for role, text in contents if role == "user"]
    return users[-1] if users else "\n".join(text for _, text in contents)


def system_text(prompt: Any) -> str | None:
    """A chat's first system message, or None (a string, an empty prompt, a chat without one)."""
    if isinstance(prompt, str) or not isinstance(prompt, Sequence):
        return None
    return next(
        (_content_text(m.get("content")) for m in _messages(prompt) if m.get("role") == "system"),
        None,
    )
