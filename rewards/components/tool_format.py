"""Tool format: are the rollout's tool calls well-formed?

A call is well-formed when the trainer could parse it into a ``tool_calls`` entry (a
``<tool_call>`` tag holding a JSON object with ``name`` and ``arguments``, the Qwen2.5/Qwen3
layout, Qwen Team 2024 "Qwen2.5 Technical Report" §4 function calling); one it could not parse
stays in the text as a ``<tool_call>`` tag (TRL 1.16 ``parse_response`` falls back to plain text).
The score is the well-formed share of all calls, the format-reward idea of DeepSeek-R1 (Guo et
al. 2025 §2.2.2) applied to calls; a rollout with no call scores ``no_call_value``.
"""

from __future__ import annotations

from typing import Any

from rewards.completions.tool_calls import malformed_calls, tool_calls
from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults

PARAMS = (
    ParamSpec(
        "no_call_value", "float", 0.0, "score of a rollout without any call", min=-1.0, max=1.0
    ),
)


class ToolFormat(RewardComponent):
    component = "tool_format"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        self.no_call_value = with_defaults(PARAMS, params)["no_call_value"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        rollouts = ctx.completions if ctx.completions is not None else texts
        out = []
        for rollout in rollouts:
            calls, bad = tool_calls(rollout), malformed_calls(rollout)
            if not calls and not bad:
                out.append(Judgement(self.no_call_value, "no tool call"))
            elif not bad:
                named = "; ".join(f"call {c.number}: {c.name} well-formed" for c in calls[:3])
                out.append(Judgement(1.0, named))
            else:
                total = len(calls) + bad
                why = f"{bad} of {total} calls malformed (a <tool_call> that is not JSON)"
                out.append(Judgement(len(calls) / total, why))
        return out


INFO = ComponentInfo(
    name="tool_format",
    factory=ToolFormat,
    params=PARAMS,
    description="Pays well-formed tool calls: the share of a rollout's calls the trainer parsed.",
    source="Qwen2.5 report §4 (<tool_call> JSON layout); DeepSeek-R1 §2.2.2 (format reward)",
)
