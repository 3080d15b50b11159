"""A tool rollout drawn as turns: model text, tool call, tool result, answer (issue 24).

TRL 1.16's GRPOTrainer trains on every token the model wrote (text, calls, the answer) and masks
the tool results out of the loss (its ``tool_mask``; the world-model loss is the one loss that
reads them). So each turn is labelled and a tool result is drawn apart, dashed and grey, as
"masked". Every text is HTML-escaped: the cells that show it are HTML, and a completion, an
argument or a tool result may hold any characters a user or a model wrote.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rewards.completions.text import completion_text
from rewards.completions.tool_calls import CALL_CLOSE, CALL_OPEN, is_conversation
from ui.shared.trace_view import completion_html

TurnKind = Literal["text", "call", "result", "answer"]
MAX_TURN_CHARS = 2_000  # a turn longer than this is cut (a table cell stays light)

_LABELS: dict[TurnKind, str] = {
    "text": "model",
    "call": "tool call",
    "result": "tool result · masked, not trained",
    "answer": "answer",
}
_TRAINED = "border-left:3px solid #2563eb;padding:2px 6px;margin:2px 0"
# The theme's own colours, so a masked turn reads in dark mode too (a light box with the dark
# theme's light text in it was unreadable).
_MASKED = (
    "border:1px dashed var(--border-color-primary,#9ca3af);"
    "background:var(--background-fill-secondary,#f3f4f6);"
    "color:var(--body-text-color-subdued,#4b5563);padding:2px 6px;margin:2px 0"
)
_LABEL = "font-size:0.75em;font-weight:600;text-transform:uppercase;opacity:0.7"
_CALL_RE = re.compile(re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE), re.DOTALL)


@dataclass(frozen=True)
class Turn:
    """One turn of a rollout; ``trained``: its tokens are in the policy loss."""

    kind: TurnKind
    text: str

    @property
    def trained(self) -> bool:
        return self.kind != "result"


def conversation_turns(messages: Sequence[Any]) -> list[Turn]:
    """The turns of TRL's rollout messages: each assistant turn's text, then its calls (one turn
    each, ``name({...})``), each ``tool`` message as a result; the last assistant text after a
    call is the answer."""
    turns: list[Turn] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role", "assistant")
        if role == "tool":
            turns.append(Turn("result", _text(message.get("content"))))
        elif role == "assistant":
            text = _text(message.get("content"))
            if text.strip():
                turns.append(Turn("text", text))
            for call in message.get("tool_calls") or []:
                turns.append(Turn("call", _call_text(call)))
    return _mark_answer(turns)


def text_turns(text: str) -> list[Turn]:
    """The turns of one sampled text: its ``<tool_call>`` blocks as calls between model text
    (what the Preview samples: one turn, so no result comes back)."""
    turns: list[Turn] = []
    at = 0
    for match in _CALL_RE.finditer(text):
        call = _parsed_call(match.group(1))
        if call is None:  # malformed: it stays in the text, tag and all (as TRL leaves it)
            continue
        if text[at : match.start()].strip():
            turns.append(Turn("text", text[at : match.start()]))
        turns.append(Turn("call", _call_text(call)))
        at = match.end()
    if text[at:].strip():
        turns.append(Turn("text", text[at:]))
    return _mark_answer(turns)


def has_tool_turns(turns: Sequence[Turn]) -> bool:
    return any(t.kind in ("call", "result") for t in turns)


def turns_html(turns: Sequence[Turn], answer_tag: str = "answer") -> str:
    """The turns as HTML: a label per turn, trained turns with a solid bar, results dashed."""
    parts = []
    for turn in turns:
        if turn.kind in ("text", "answer"):  # tags coloured, the answer highlighted, cut
            body = completion_html(turn.text, answer_tag, max_chars=MAX_TURN_CHARS)
        else:
            cut = "…" if len(turn.text) > MAX_TURN_CHARS else ""
            body = html.escape(turn.text[:MAX_TURN_CHARS]).replace("\n", "<br>") + cut
        style = _TRAINED if turn.trained else _MASKED
        title = "in the loss" if turn.trained else "masked out of the policy loss"
        parts.append(
            f'<div class="turn turn-{turn.kind}" style="{style}" title="{title}">'
            f'<div style="{_LABEL}">{_LABELS[turn.kind]}</div>{body}</div>'
        )
    return "".join(parts)


def completion_view(completion: Any, conversation: Any = None, answer_tag: str = "answer") -> str:
    """A stored or cached completion as HTML: its conversation drawn as turns when it has tool
    turns (``conversation``: the messages kept in a sample's ``extra``), else the highlighted
    text of :func:`~ui.shared.trace_view.completion_html`."""
    if is_conversation(conversation):
        turns = conversation_turns(conversation)
    elif is_conversation(completion):
        turns = conversation_turns(completion)
    else:
        turns = text_turns(str(completion))
    if has_tool_turns(turns):
        return turns_html(turns, answer_tag)
    return completion_html(completion_text(completion), answer_tag)


def _mark_answer(turns: list[Turn]) -> list[Turn]:
    """The last model text, when it follows a call or a result, is the answer."""
    if len(turns) > 1 and turns[-1].kind == "text" and has_tool_turns(turns[:-1]):
        turns[-1] = Turn("answer", turns[-1].text)
    return turns


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # TRL's multimodal form: [{"type": "text", "text": ...}]
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _parsed_call(body: str) -> dict[str, Any] | None:
    """The ``{"name": ..., "arguments": ...}`` of a call's text, or None when it is not one."""
    try:
        call = json.loads(body) if len(body) <= MAX_TURN_CHARS else None
    except (ValueError, RecursionError):  # a model may nest brackets a thousand deep
        return None
    return call if isinstance(call, dict) and isinstance(call.get("name"), str) else None


def _call_text(call: Any) -> str:
    function = call.get("function", call) if isinstance(call, dict) else {}
    name = str(function.get("name", "?"))
    arguments = function.get("arguments")
    try:
        shown = json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(arguments)
    return f"{name}({shown})"
