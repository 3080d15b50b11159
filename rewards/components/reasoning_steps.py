"""Reasoning steps: does the completion lay out its reasoning in explicit steps?

Reference: open-r1 ``reasoning_steps_reward``: count the non-overlapping matches of
``(Step \\d+:|^\\d+\\.|\\n-|\\n\\*|First,|Second,|Next,|Finally,)`` and return
``min(1, count / 3)``. The markers (one alternation, in the given order, leftmost-first) and the
target count are parameters; the defaults reproduce the reference exactly. ``^`` anchors at the
start of the text only, as in the reference. Markers run on RE2 (linear time).
"""

from __future__ import annotations

from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.input_guards.safe_regex import compile_safe
from rewards.params import ComponentInfo, ParamSpec, with_defaults

DEFAULT_MARKERS = (
    r"Step \d+:",
    r"^\d+\.",
    r"\n-",
    r"\n\*",
    "First,",
    "Second,",
    "Next,",
    "Finally,",
)

PARAMS = (
    ParamSpec(
        "markers",
        "list",
        DEFAULT_MARKERS,
        "step markers (regular expressions, RE2 syntax)",
        max_items=32,
        max_length=200,
        regex=True,
    ),
    ParamSpec("target", "int", 3, "markers needed for the full reward", min=1, max=100),
    ParamSpec("case_sensitive", "bool", True, "match markers case-sensitively"),
)


class ReasoningSteps(RewardComponent):
    component = "reasoning_steps"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.markers = tuple(p["markers"])
        self.target = p["target"]
        self.case_sensitive = p["case_sensitive"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        if not self.markers:
            return [Judgement(0.0, "no step markers configured") for _ in texts]
        pattern = compile_safe("|".join(f"(?:{m})" for m in self.markers), self.case_sensitive)
        out = []
        for text in texts:
            count = sum(1 for _ in pattern.finditer(text))
            value = min(1.0, count / self.target)
            out.append(Judgement(value, f"{count} of {self.target} step markers"))
        return out


INFO = ComponentInfo(
    name="reasoning_steps",
    factory=ReasoningSteps,
    params=PARAMS,
    description="Counts step markers (Step 1:, First, Next, list items); min(1, count / target).",
    source="open-r1 reasoning_steps_reward",
)
