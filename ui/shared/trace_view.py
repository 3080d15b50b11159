"""Showing completions and their reward traces: tags and the extracted answer highlighted."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

from rewards.completions.text import MAX_COMPLETION_CHARS
from rewards.verification.answers import extract_answer, find_answer

TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9_-]{0,30}>")
TAG_STYLE = "color:#7c3aed;font-weight:600"
ANSWER_STYLE = "background:#fde68a;border-radius:3px;padding:0 2px"


def _tags(text: str) -> str:
    """Escape ``text`` and colour XML-like tags in it."""
    out, at = [], 0
    for match in TAG_RE.finditer(text):
        out.append(html.escape(text[at : match.start()]))
        out.append(f'<span style="{TAG_STYLE}">{html.escape(match.group())}</span>')
        at = match.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def completion_html(text: str, answer_tag: str = "answer", max_chars: int = 4000) -> str:
    """The completion as HTML: tags coloured, the extracted final answer highlighted.

    Long completions are cut at ``max_chars`` (marked with an ellipsis) to keep tables light.
    """
    span = find_answer(text, answer_tag)
    cut = len(text) > max_chars
    shown = text[:max_chars]
    if span is None or span.end > len(shown):
        body = _tags(shown)
    else:
        body = (
            _tags(shown[: span.start])
            + f'<mark style="{ANSWER_STYLE}" title="extracted answer">'
            + html.escape(shown[span.start : span.end])
            + "</mark>"
            + _tags(shown[span.end :])
        )
    return body.replace("\n", "<br>") + ("…" if cut else "")


WHOLE_TEXT = "(no answer tag or box: the whole text was checked)"


def extracted_text(completion: str) -> str:
    """What correctness compared with the gold: the extracted answer, else a note that it read
    the whole completion (its fallback, see ``rewards.verification.answers``)."""
    return extract_answer(completion) or WHOLE_TEXT


def cut_note(completion: str) -> str:
    """Why a very long completion may miss its answer tag: components read only its first
    :data:`~rewards.completions.text.MAX_COMPLETION_CHARS` characters ("" when it is shorter)."""
    if len(completion) <= MAX_COMPLETION_CHARS:
        return ""
    return (
        f"Scored on the first {MAX_COMPLETION_CHARS:,} of {len(completion):,} characters: "
        "anything after that (such as a closing answer tag) is not seen by the reward."
    )


def trace_columns(traces: Iterable[Iterable[Any]]) -> list[str]:
    """Component names in first-seen order over many samples' traces (dicts with ``name``)."""
    names: dict[str, None] = {}
    for trace in traces:
        for item in trace:
            name = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
            if name is not None:
                names.setdefault(str(name), None)
    return list(names)


def fmt(value: float | None, digits: int = 3) -> str:
    """A score for a table cell: ``None`` reads "–" (could not be scored); a negative zero (an
    advantage of a sample at its group's mean) reads 0, not "-0"."""
    return "–" if value is None else f"{value + 0.0:.{digits}g}"
