"""Tool errors: a penalty for each call that came back as an error.

TRL 1.16's tool loop answers a call that names no tool (``Tool calc not found.``) or whose tool
raised with ``{"error": message}`` and counts it in ``tools/failure_frequency``; this component
scores the same event per rollout: ``error_value`` per failed call, at least ``floor``. The
trace names each failed call ("call 1: unknown tool 'calc'").
"""

from __future__ import annotations

from typing import Any

from rewards.completions.tool_calls import ToolCall, tool_calls
from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults

PARAMS = (
    ParamSpec("error_value", "float", -0.5, "score of each failed call", min=-10.0, max=0.0),
    ParamSpec("floor", "float", -1.0, "lowest score of one rollout", min=-10.0, max=0.0),
)


def describe_failure(call: ToolCall) -> str:
    """``call 1: unknown tool 'calc'`` for TRL's not-found error, else the call and its error."""
    if call.error == f"Tool {call.name} not found.":
        return f"call {call.number}: unknown tool {call.name!r}"
    return call.describe()


class ToolErrors(RewardComponent):
    component = "tool_errors"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.error_value, self.floor = p["error_value"], p["floor"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        rollouts = ctx.completions if ctx.completions is not None else texts
        out = []
        for rollout in rollouts:
            calls = tool_calls(rollout)
            failed = [c for c in calls if c.error is not None]
            if not failed:
                why = f"{len(calls)} calls, none failed" if calls else "no tool call"
                out.append(Judgement(0.0, why))
                continue
            value = max(self.floor, self.error_value * len(failed))
            out.append(Judgement(value, "; ".join(describe_failure(c) for c in failed[:3])))
        return out


INFO = ComponentInfo(
    name="tool_errors",
    factory=ToolErrors,
    params=PARAMS,
    description="Penalises tool calls that failed (unknown tool, refused arguments).",
    source="TRL 1.16 GRPOTrainer tool loop (tools/failure_frequency counts the same failures)",
)
