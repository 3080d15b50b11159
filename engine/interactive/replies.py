"""Replies to one prompt, as the Playground, ``/generate`` and ``engine generate`` draw them.

A run trained with ``tools:`` answers through calls (the calculator's result, then the answer),
so its replies are sampled as the run sampled them in training
(:func:`engine.tools.rollout.sample_tool_rollouts`, with the run's own tools and call budget),
each one a conversation; they come whole, not token by token: a call's result is only known
once the call is complete. Without tools, replies stream token by token
(:func:`engine.generation.playground.stream_replies`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from engine.config.tools import ToolSettings
from engine.data.prompts import Prompt
from engine.fields import ConfigError
from engine.generation.playground import GenerateError, stream_replies
from engine.generation.settings import SamplingSettings
from engine.runtime.devices import bounded_threads

#: One reply: its text, or a tool rollout's messages.
Reply = Any


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
        settings,
    )
    return [r.conversation for r in rollouts]


def reply_stream(
    model: Any,
    tokenizer: Any,
    prompt: Prompt,
    settings: SamplingSettings,
    tools: ToolSettings | None = None,
    model_name: str = "",
) -> Iterator[list[Reply]]:
    """The replies so far, after every token; through ``tools`` (a run's, when enabled) the
    finished rollouts once. ``model_name`` names the model whose chat template carries the
    tool calls."""
    if tools is not None and tools.enabled:
        yield tool_replies(model, tokenizer, prompt, settings, tools, model_name)
        return
    yield from stream_replies(model, tokenizer, prompt, settings)


def side_by_side(
    streams: Sequence[Iterator[list[Reply]]],
    num_samples: int,
    threads: int,
    deadline: float | None = None,
) -> Iterator[list[list[Reply]]]:
    """Every stream's replies so far, after each turn: the streams take turns (both sides of
    a comparison grow together) on at most ``threads`` intra-op threads, until all have ended
    or ``time.monotonic()`` passes ``deadline`` (a public app's bound on one call)."""
    current: list[list[Reply]] = [[""] * num_samples for _ in streams]
    active = [True] * len(streams)
    with bounded_threads(threads):
        while any(active) and (deadline is None or time.monotonic() < deadline):
            for i, stream in enumerate(streams):
                if active[i]:
                    try:
                        current[i] = next(stream)
                    except StopIteration:
                        active[i] = False
            yield [list(replies) for replies in current]


def finished_replies(
    model: Any,
    tokenizer: Any,
    prompt: Prompt,
    settings: SamplingSettings,
    threads: int,
    tools: ToolSettings | None = None,
    model_name: str = "",
    deadline: float | None = None,
) -> list[Reply]:
    """The replies of one model when done (or the replies so far at ``deadline``)."""
    last: list[Reply] = [""] * settings.num_samples
    stream = reply_stream(model, tokenizer, prompt, settings, tools, model_name)
    for (replies,) in side_by_side([stream], settings.num_samples, threads, deadline):
        last = replies
    return last
