"""Tool answer: is the final answer, given after the tool calls, right?

The correctness check (:mod:`rewards.components.correctness`: open-r1/TRL ``accuracy_reward``
with our answer extraction) applied to the rollout's last assistant turn only, the outcome
reward of agentic RL (e.g. ReTool, Feng et al. 2025 §3; Search-R1, Jin et al. 2025 §3.3: the
reward reads only the final answer). A right answer reached without any call scores
``without_call_value`` (1 by default; lower it to make calling pay). The trace names the last
call the answer followed ("after call 2: calculator('17*3') -> 51: 51 = 51").
"""

from __future__ import annotations

from typing import Any

from rewards.completions.tool_calls import final_text, tool_calls
from rewards.components.base import BatchContext, Judgement
from rewards.components.correctness import INFO as CORRECTNESS_INFO
from rewards.components.correctness import PARAMS as CORRECTNESS_PARAMS
from rewards.components.correctness import Correctness
from rewards.params import ComponentInfo, ParamSpec, with_defaults

PARAMS = (
    *CORRECTNESS_PARAMS,
    ParamSpec(
        "without_call_value",
        "float",
        1.0,
        "score of a right answer given without any tool call",
        min=-1.0,
        max=1.0,
    ),
)


class ToolAnswer(Correctness):
    component = "tool_answer"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        p = with_defaults(PARAMS, params)
        self.without_call_value = p.pop("without_call_value")
        super().__init__(name, **p)

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        rollouts = ctx.completions if ctx.completions is not None else texts
        finals = [final_text(r) for r in rollouts]
        # Its own memo: correctness in the same spec memoises verdicts of the whole text.
        own = BatchContext(ctx.size, ctx.prompts, ctx.completion_ids, ctx.columns)
        out = []
        for rollout, j in zip(rollouts, super().judge(finals, own), strict=True):
            calls = tool_calls(rollout)
            if not calls:
                right = j.value == 1.0
                value = self.without_call_value if right else j.value
                out.append(Judgement(value, f"no tool call: {j.explanation}"))
            else:
                out.append(Judgement(j.value, f"after {calls[-1].describe()}: {j.explanation}"))
        return out


INFO = ComponentInfo(
    name="tool_answer",
    factory=ToolAnswer,
    params=PARAMS,
    description="Correctness of the final answer given after the tool calls.",
    source="ReTool (Feng et al. 2025) §3, Search-R1 (Jin et al. 2025) §3.3 outcome reward",
    check=CORRECTNESS_INFO.check,  # the same parameter checks (option letters)
)
