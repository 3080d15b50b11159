"""Format: does the completion follow the required tag structure?

Reference: DeepSeek-R1 / open-r1 ``format_reward`` (strict structure, 1 or 0), open-r1
``tag_count_reward`` (0.25 per required tag present exactly once), TRL
``trl.rewards.think_format_reward`` (think block only).

Modes:

- ``strict``: 1.0 when the completion is ``<think>…</think>`` then ``<answer>…</answer>`` and
  nothing else, each of the four tags exactly once (whitespace between blocks and at the end is
  allowed, text before ``<think>`` is not); else 0.0. With ``answer_tag=''`` only the think block
  is required and any text may follow it, exactly TRL's ``think_format_reward`` (starts with
  ``<think>``, no second ``<think>``, a ``</think>`` somewhere after).
- ``soft``: 1/k for each of the k required tags that appears exactly once (0.25 each for the
  default four tags).
- ``pairs``: for each required pair (think, answer), an equal share of 1.0 when its opening tag
  appears once, its closing tag once, and in that order (0.5 + 0.5 by default: the hand-tuned
  weighting of earlier GRPO scripts).

``think_prefilled``: the chat template already opened ``<think>`` in the prompt (Qwen3, R1
distills), so the completion is read as if it started with it.
"""

from __future__ import annotations

from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults

_TAG_NAME = "a tag name: letters, digits, '_' or '-'"

PARAMS = (
    ParamSpec(
        "mode", "str", "strict", "how the structure is scored", choices=("strict", "soft", "pairs")
    ),
    ParamSpec("think_tag", "str", "think", "tag around the reasoning", max_length=32),
    ParamSpec(
        "answer_tag",
        "str",
        "answer",
        "tag around the final answer ('' = none required)",
        max_length=32,
    ),
    ParamSpec("think_prefilled", "bool", False, "the prompt already opened the think tag"),
)


class Format(RewardComponent):
    component = "format"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.mode = p["mode"]
        self.think_prefilled = p["think_prefilled"]
        think, answer = p["think_tag"], p["answer_tag"]
        self.pairs = [(f"<{think}>", f"</{think}>")]
        if answer:
            self.pairs.append((f"<{answer}>", f"</{answer}>"))

    def _prepare(self, text: str) -> str:
        opening = self.pairs[0][0]
        if self.think_prefilled and not text.startswith(opening):
            return opening + text
        return text

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        scorer = {"strict": self._strict, "soft": self._soft, "pairs": self._pairs}[self.mode]
        return [scorer(self._prepare(t)) for t in texts]

    def _strict(self, text: str) -> Judgement:
        (t_open, t_close), *rest = self.pairs
        if not text.startswith(t_open):
            where = "text before" if t_open in text else "missing"
            return Judgement(0.0, f"{where} {t_open}")
        if text.count(t_open) != 1:
            return Judgement(0.0, f"{t_open} appears {text.count(t_open)} times")
        close_at = text.find(t_close)
        if close_at < 0:
            return Judgement(0.0, f"missing {t_close}")
        if not rest:
            return Judgement(1.0, f"{t_open}…{t_close} structure")
        a_open, a_close = rest[0]
        for tag in (t_close, a_open, a_close):
            n = text.count(tag)
            if n != 1:
                return Judgement(0.0, f"missing {tag}" if n == 0 else f"{tag} appears {n} times")
        open_at, end_at = text.find(a_open), text.find(a_close)
        if not close_at < open_at < end_at:
            return Judgement(0.0, "tags out of order")
        if text[close_at + len(t_close) : open_at].strip():
            return Judgement(0.0, f"text between {t_close} and {a_open}")
        if text[end_at + len(a_close) :].strip():
            return Judgement(0.0, f"text after {a_close}")
        return Judgement(1.0, f"{t_open}…{t_close}{a_open}…{a_close} structure")

    def _soft(self, text: str) -> Judgement:
        tags = [tag for pair in self.pairs for tag in pair]
        once = [tag for tag in tags if text.count(tag) == 1]
        missing = [tag for tag in tags if tag not in once]
        note = f"{len(once)} of {len(tags)} tags exactly once"
        if missing:
            note += " (not: " + ", ".join(missing) + ")"
        return Judgement(len(once) / len(tags), note)

    def _pairs(self, text: str) -> Judgement:
        good = []
        for opening, closing in self.pairs:
            once = text.count(opening) == 1 and text.count(closing) == 1
            if once and text.find(opening) < text.find(closing):
                good.append(opening + closing)
        note = f"{len(good)} of {len(self.pairs)} tag pairs well-formed"
        return Judgement(len(good) / len(self.pairs), note)


def _check(params: dict[str, Any]) -> None:
    from rewards.errors import RewardSpecError

    for key in ("think_tag", "answer_tag"):
        value = params[key]
        if value == "" and key == "answer_tag":
            continue
        if not value or not all(c.isalnum() or c in "_-" for c in value) or not value.isascii():
            raise RewardSpecError(key, f"must be {_TAG_NAME}, got {value!r}")
    if params["think_tag"] == params["answer_tag"]:
        raise RewardSpecError("answer_tag", "must differ from think_tag")


INFO = ComponentInfo(
    name="format",
    factory=Format,
    params=PARAMS,
    description=(
        "Rewards the <think>…</think><answer>…</answer> tag structure (strict, soft or per pair)."
    ),
    source=(
        "DeepSeek-R1 format reward; open-r1 format_reward and tag_count_reward; "
        "TRL trl.rewards.think_format_reward"
    ),
    check=_check,
)
