"""Finding the final answer in a completion, and reading gold answers.

Why extract before calling math-verify: ``math_verify.parse("<answer>42</answer>")`` finds
nothing (no space around the number), and on ``<think>7+5=12</think><answer>42</answer>`` it
returns 12, the first number it meets. So the answer is located first, in this order:

1. the content of the last complete ``<answer>…</answer>`` pair (tag name configurable);
2. the content of the last ``\\boxed{…}`` (or ``\\fbox{…}``) whose braces balance (of the
   last 16 boxes);
3. the rest of the line after the last ``####`` (GSM8K's answer marker).

Only when none is present does the correctness component hand the whole text to math-verify.
Gold answers go through :func:`gold_answer`: GSM8K golds carry the answer after ``####``, boxed
golds are unboxed, numbers become strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

AnswerSource = Literal["answer_tag", "boxed", "hashes"]

_BOX_COMMANDS = ("\\boxed{", "\\fbox{")
_MAX_BOX_TRIES = 16


@dataclass(frozen=True)
class AnswerSpan:
    """Where the final answer sits in a completion.

    ``text`` is the answer as written (stripped); ``start``/``end`` are character offsets of
    that stripped text in the completion, so a UI can highlight ``completion[start:end]``.
    """

    text: str
    start: int
    end: int
    source: AnswerSource

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "start": self.start, "end": self.end, "source": self.source}


def _strip_span(text: str, start: int, end: int, source: AnswerSource) -> AnswerSpan:
    inner = text[start:end]
    lead = len(inner) - len(inner.lstrip())
    stripped = inner.strip()
    return AnswerSpan(stripped, start + lead, start + lead + len(stripped), source)


def _answer_tag_span(text: str, tag: str) -> AnswerSpan | None:
    close = f"</{tag}>"
    close_at = text.rfind(close)
    if close_at < 0:
        return None
    open_tag = f"<{tag}>"
    open_at = text.rfind(open_tag, 0, close_at)
    if open_at < 0:
        return None
    return _strip_span(text, open_at + len(open_tag), close_at, "answer_tag")


def _boxed_span(text: str) -> AnswerSpan | None:
    # The last box whose braces balance; boxes are tried from the end, at most
    # _MAX_BOX_TRIES of them, and each close brace is searched once (linear in the text).
    starts = []
    for cmd in _BOX_COMMANDS:
        at = text.find(cmd)
        while at >= 0:
            starts.append(at + len(cmd))
            at = text.find(cmd, at + 1)
    if not starts:
        return None
    starts.sort()
    candidates = starts[-_MAX_BOX_TRIES:]
    # depth-matching close brace for each open brace, one pass from the earliest candidate
    closing: dict[int, int] = {}
    stack: list[int] = []
    for i in range(candidates[0] - 1, len(text)):
        ch = text[i]
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            closing[stack.pop()] = i
    for start in reversed(candidates):
        end = closing.get(start - 1)
        if end is not None:
            return _strip_span(text, start, end, "boxed")
    return None


def _hashes_span(text: str) -> AnswerSpan | None:
    at = text.rfind("####")
    if at < 0:
        return None
    start = at + 4
    end = text.find("\n", start)
    return _strip_span(text, start, len(text) if end < 0 else end, "hashes")


def find_answer(text: str, answer_tag: str = "answer") -> AnswerSpan | None:
    """Locate the final answer in ``text`` (see the module docstring for the order).

    Returns ``None`` when the completion has no answer tag, box or ``####`` marker, or when the
    marked answer is empty.
    """
    for span in (
        _answer_tag_span(text, answer_tag) if answer_tag else None,
        _boxed_span(text),
        _hashes_span(text),
    ):
        if span is not None:
            return span if span.text else None
    return None


def extract_answer(text: str, answer_tag: str = "answer") -> str | None:
    """The final answer written in ``text``, or ``None`` when no answer is marked.

    >>> extract_answer("<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>")
    '24'
    >>> extract_answer("so the result is \\\\boxed{\\\\frac{1}{2}}")
    '\\\\frac{1}{2}'
    >>> extract_answer("The answer is 24") is None
    True
    """
    span = find_answer(text, answer_tag)
    return None if span is None else span.text


def gold_answer(gold: Any) -> str | None:
    """A dataset's gold answer as the string to compare against, or ``None`` when unusable.

    Accepts strings, ints and floats (not bools); GSM8K solutions (``... #### 42``) give the part
    after the last ``####``; a boxed gold is unboxed; ``<answer>`` tags are removed.
    """
    if gold is None or isinstance(gold, bool):
        return None
    if isinstance(gold, int | float):
        if isinstance(gold, float) and not (gold == gold and abs(gold) != float("inf")):
            return None
        return str(gold)
    if not isinstance(gold, str):
        return None
    span = find_answer(gold)
    text = span.text if span is not None else gold.strip()
    return text or None
