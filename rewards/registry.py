"""The registry: one dict from component name to its description, factory and parameters.

The UI's component choices, its parameter forms and the CLI's help are generated from
:data:`REGISTRY`; nothing about a component is typed twice. Each entry is a
:class:`ComponentInfo`; each parameter a :class:`ParamSpec` (type, default, range or choices,
one-line doc). ``ComponentInfo.to_dict()`` gives the JSON a form builder needs.
"""

from __future__ import annotations

from typing import Any

from rewards.components import (
    code_format,
    conciseness,
    correctness,
    judge,
    language,
    python_code,
    reasoning_steps,
    relative_length,
    repetition,
    reward_model,
    rule,
    similarity,
    tool_answer,
    tool_budget,
    tool_errors,
    tool_format,
)
from rewards.components import format as format_
from rewards.params import ComponentInfo, ParamSpec

__all__ = ["REGISTRY", "ComponentInfo", "ParamSpec", "describe"]

REGISTRY: dict[str, ComponentInfo] = {
    module.INFO.name: module.INFO
    for module in (
        correctness,
        format_,
        reasoning_steps,
        repetition,
        conciseness,
        relative_length,
        language,
        code_format,
        similarity,
        reward_model,
        judge,
        rule,
        python_code,
        tool_format,
        tool_errors,
        tool_budget,
        tool_answer,
    )
}


def describe() -> list[dict[str, Any]]:
    """Every component as JSON-serialisable dicts, in registry order (for forms and help)."""
    return [info.to_dict() for info in REGISTRY.values()]
