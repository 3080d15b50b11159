"""The Playground's replies for a run with tools: each one a rollout through TRL's tool loop.

A run trained with ``tools:`` answers through calls (the calculator's result, then the answer),
so the Playground samples its replies as the run sampled them in training
(:func:`engine.tools.rollout.sample_tool_rollouts`, with the run's own tools and call budget)
and shows them as turns, each scored as a conversation by the run's reward. Such replies come
whole, not token by token: a call's result is only known once the call is complete.
"""

from __future__ import annotations

from typing import Any

from engine.config.tools import ToolSettings
from engine.fields import ConfigError
from engine.generation.playground import GenerateError, SamplingSettings


def tool_replies(
    model: Any,
    tokenizer: Any,
    prompt: list[dict[str, Any]],
    settings: SamplingSettings,
    tools: ToolSettings,
    model_name: str,
) -> list[list[dict[str, Any]]]:
    """``settings.num_samples`` tool rollouts of ``prompt``: each reply's messages."""
    from engine.config.toolbox import toolbox_for
    from engine.tools.rollout import sample_tool_rollouts
    from engine.tools.template import prepare_tool_tokenizer

    try:
        prepare_tool_tokenizer(tokenizer, model_name)
        toolbox = toolbox_for(tools)
    except ConfigError as exc:
        raise GenerateError("model", exc.reason) from None
    rollouts = sample_tool_rollouts(
        model,
        tokenizer,
        [prompt],
        toolbox,
        num_samples=int(settings.num_samples),
        temperature=float(settings.temperature),
        top_p=float(settings.top_p),
        max_new_tokens=int(settings.max_new_tokens),
        seed=int(settings.seed),
    )
    return [r.conversation for r in rollouts]
