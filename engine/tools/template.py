"""Whether a model's chat template can carry tool calls, and how TRL reads them back.

TRL 1.16's GRPOTrainer needs two things of the tokenizer before a tool rollout can run: a chat
template that renders a whole tool exchange (user -> assistant with ``tool_calls`` -> tool
result; TRL's ``supports_tool_calling`` renders one and looks for every part), and a response
template (or legacy schema) with which ``parse_response`` turns sampled text back into a message
with ``tool_calls``. TRL's ``add_response_schema`` sets the latter only for the templates it
knows (Qwen2.5, Qwen3, Qwen3.5, Llama 3.1/3.2, GLM-4-MoE, GPT-OSS, ...); the shipped default
model's template is ours, so its response template is set here. Both checks run before training
starts and fail as a :class:`ConfigError` on ``tools.builtin`` that says which models can.

A sampled call nested a few thousand levels deep (``{"expression": [[[[...]]]]}``) makes
``json`` raise ``RecursionError`` inside ``tokenizer.parse_response``, which TRL's
``parse_response`` does not catch (only ``ValueError``/``TypeError``): one completion would end
the run. :func:`prepare_tool_tokenizer` wraps the tokenizer's parser so that such a completion
fails to parse like any malformed call: TRL keeps it as text, and only that call is lost.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from trl.chat_template_utils import add_response_schema, supports_tool_calling

from engine.fields import ConfigError
from engine.models.char_tokenizer import CHAT_TEMPLATE, RESPONSE_TEMPLATE

TOOL_MODELS = (
    "models with a Qwen2.5/Qwen3-style template (e.g. Qwen/Qwen2.5-0.5B-Instruct, "
    "Qwen/Qwen3-0.6B) or the shipped default model"
)


def prepare_tool_tokenizer(tokenizer: Any, model_name: str) -> None:
    """Check that ``tokenizer`` can render and parse tool calls; set its response template.

    Raises:
        ConfigError: on ``tools.builtin``, naming the model and the templates that can.
    """
    if not getattr(tokenizer, "chat_template", None) or not supports_tool_calling(tokenizer):
        raise ConfigError(
            "tools.builtin",
            f"the chat template of {model_name} cannot render tool calls and tool results; "
            f"tools need {TOOL_MODELS}",
        )
    if not _has_parser(tokenizer):
        _set_parser(tokenizer, model_name)
    if not getattr(tokenizer.parse_response, "bounded", False):
        tokenizer.parse_response = _bounded(tokenizer.parse_response)


def _set_parser(tokenizer: Any, model_name: str) -> None:
    if tokenizer.chat_template == CHAT_TEMPLATE:
        tokenizer.response_template = RESPONSE_TEMPLATE
        return
    try:
        add_response_schema(tokenizer)
    except ValueError:
        raise ConfigError(
            "tools.builtin",
            f"TRL cannot read tool calls back from the chat template of {model_name} (it knows "
            f"Qwen2.5/Qwen3, Llama 3.1/3.2, GLM-4, GPT-OSS templates); use {TOOL_MODELS}",
        ) from None


def _bounded(parse: Callable[..., Any]) -> Callable[..., Any]:
    """``parse`` with a too deeply nested call turned into the ``ValueError`` TRL catches."""

    @functools.wraps(parse)
    def parse_response(*args: Any, **kwargs: Any) -> Any:
        try:
            return parse(*args, **kwargs)
        except RecursionError:
            raise ValueError("tool call nested too deeply to parse") from None

    parse_response.bounded = True  # type: ignore[attr-defined]
    return parse_response


def _has_parser(tokenizer: Any) -> bool:
    return any(
        getattr(tokenizer, name, None) is not None
        for name in ("response_template", "response_schema")
    )
