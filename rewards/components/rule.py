"""Rule: a user's keyword or regular-expression check, as a bonus or a penalty.

``kind`` says what the completion should do (``must_contain`` / ``must_not_contain`` the
pattern), ``effect`` how that pays: a ``bonus`` scores 1 when the rule is kept and 0 otherwise,
a ``penalty`` scores -1 when it is broken and 0 otherwise (the weight scales either). ``scope``
chooses the whole completion or only its extracted final answer.

Safe on a public server: patterns run on RE2 (linear time, no catastrophic backtracking), are at
most 500 characters and are compiled when the spec is validated, so an invalid pattern is
rejected there with the field named; at most the first 50,000 characters of a completion are
searched. Several rules may share one spec (metric names ``rule``, ``rule_2``, ... or a label).
"""

from __future__ import annotations

import re
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.input_guards.safe_regex import MAX_PATTERN_CHARS, compile_safe
from rewards.params import ComponentInfo, ParamSpec, with_defaults
from rewards.verification.answers import extract_answer

#: Characters of each completion a rule searches.
MAX_RULE_INPUT_CHARS = 50_000

PARAMS = (
    ParamSpec(
        "pattern",
        "str",
        r"as an AI( language)? model",
        "text or regular expression (RE2 syntax) to look for",
        max_length=MAX_PATTERN_CHARS,
        regex=True,
    ),
    ParamSpec(
        "kind",
        "str",
        "must_not_contain",
        "what the completion should do",
        choices=("must_contain", "must_not_contain"),
    ),
    ParamSpec("effect", "str", "penalty", "how the rule pays", choices=("bonus", "penalty")),
    ParamSpec("literal", "bool", False, "match the pattern as plain text, not a regex"),
    ParamSpec("case_sensitive", "bool", False, "match case-sensitively"),
    ParamSpec("scope", "str", "completion", "where to look", choices=("completion", "answer")),
    ParamSpec("answer_tag", "str", "answer", "answer scope: tag around the answer", max_length=32),
)


class Rule(RewardComponent):
    component = "rule"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.pattern = p["pattern"]
        self.kind = p["kind"]
        self.effect = p["effect"]
        self.literal = p["literal"]
        self.case_sensitive = p["case_sensitive"]
        self.scope = p["scope"]
        self.answer_tag = p["answer_tag"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        source = re.escape(self.pattern) if self.literal else self.pattern
        regex = compile_safe(source, self.case_sensitive)
        shown = f'"{self.pattern}"' if self.literal else f"/{self.pattern}/"
        if len(shown) > 42:
            shown = shown[:40] + "…"
        out = []
        for text in texts:
            if self.scope == "answer":
                text = extract_answer(text, self.answer_tag) or ""
            match = regex.search(text[:MAX_RULE_INPUT_CHARS])
            kept = (match is not None) == (self.kind == "must_contain")
            found = f'found "{_clip(match.group(0))}"' if match else f"no {shown}"
            paid = 1.0 if self.effect == "bonus" else -1.0
            value = (paid if kept else 0.0) if self.effect == "bonus" else (0.0 if kept else paid)
            verdict = "kept" if kept else "broken"
            rule = self.kind.replace("_", " ")
            out.append(Judgement(value, f"{found}: {rule} rule {verdict}"))
        return out


def _clip(text: str, limit: int = 30) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check(params: dict[str, Any]) -> None:
    from rewards.errors import RewardSpecError

    if not params["pattern"]:
        raise RewardSpecError("pattern", "must not be empty")
    if params["literal"]:
        return
    try:
        compile_safe(params["pattern"], params["case_sensitive"])
    except ValueError as err:  # already checked as a regex; kept for the case flag
        raise RewardSpecError("pattern", f"invalid regular expression: {err}") from None


INFO = ComponentInfo(
    name="rule",
    factory=Rule,
    params=PARAMS,
    description="Your own keyword or regex check: must (not) contain, as a bonus or a penalty.",
    source="Rule-based rewards as in DeepSeek-R1 §2.2.2; RE2 linear-time matching",
    allow_multiple=True,
    check=_check,
)
