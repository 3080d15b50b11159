"""Tool budget: the number of calls against a budget.

Calls past ``budget`` cost ``over_value`` each (a length penalty counted in calls instead of
tokens, as the overlong penalty of DAPO, Yu et al. 2025 §3.4, counts tokens past a cache); a
rollout within budget scores 0, one without any call ``no_call_value``.
"""

from __future__ import annotations

from typing import Any

from rewards.completions.tool_calls import malformed_calls, tool_calls
from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults

PARAMS = (
    ParamSpec("budget", "int", 2, "calls allowed without penalty", min=0, max=32),
    ParamSpec(
        "over_value", "float", -0.5, "score of each call past the budget", min=-10.0, max=0.0
    ),
    ParamSpec(
        "no_call_value", "float", 0.0, "score of a rollout without any call", min=-1.0, max=1.0
    ),
)


class ToolBudget(RewardComponent):
    component = "tool_budget"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.budget, self.over_value = p["budget"], p["over_value"]
        self.no_call_value = p["no_call_value"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        rollouts = ctx.completions if ctx.completions is not None else texts
        out = []
        for rollout in rollouts:
            n = len(tool_calls(rollout)) + malformed_calls(rollout)
            why = f"{n} calls, budget {self.budget}"
            if n == 0:
                out.append(Judgement(self.no_call_value, why))
            else:
                out.append(Judgement(self.over_value * max(0, n - self.budget), why))
        return out


INFO = ComponentInfo(
    name="tool_budget",
    factory=ToolBudget,
    params=PARAMS,
    description="Penalises each tool call past a budget (calls counted per rollout).",
    source="DAPO (Yu et al. 2025) §3.4 overlong penalty, counted in calls",
)
