"""The Preview's tools input: which built-in tools the sampled model may call.

With tools checked, each preview rollout runs TRL's tool loop (:mod:`engine.tools.rollout`): the
model's call, the tool's result, its answer, drawn as turns, and scored by the agent components
as a run's rollouts are. Picking the shipped agent model checks the calculator and the agent
task for it and the agent run's completion length, the setup of ``export-config --task agent``.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.config.agent import AGENT_SETTINGS, AGENT_TASK
from engine.config.tools import TOOL_NAMES
from engine.models.specs import AGENT_MODEL_ALIAS


def build_tools_input() -> gr.CheckboxGroup:
    """The tools checkboxes, none checked (plain completions)."""
    gr.Markdown("### Tools")
    return gr.CheckboxGroup(
        list(TOOL_NAMES),
        value=[],
        label="Tools the model may call",
        info=(
            "Checked: each sample runs the tool loop (call, result, answer) as a run with these "
            "tools; the agent components (the 'calculator agent' preset) score its calls."
        ),
        elem_id="preview-tools",
    )


def agent_model_defaults(model_key: str) -> tuple[Any, Any, Any] | None:
    """(tools, built-in task, max new tokens) updates for the agent model: the agent run's
    (a call, its result and the answer need more room than a plain reply); None for any other
    model."""
    if model_key != AGENT_MODEL_ALIAS:
        return None
    return (
        gr.CheckboxGroup(value=list(AGENT_SETTINGS["tools.builtin"])),
        gr.Radio(value=AGENT_TASK),
        gr.Number(value=AGENT_SETTINGS["generation.max_completion_length"]),
    )
