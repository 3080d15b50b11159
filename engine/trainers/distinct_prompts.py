"""Tokenize each of a step's distinct prompts once.

TRL 1.16's GRPOTrainer and RLOOTrainer render and tokenize the prompt of every completion
(``_tokenize_prompts``): a step of 32 prompts x 8 completions runs the chat template 256 times
over 32 prompts. With SmolLM2's tokenizer and the built-in task's worked-example prompts that
took 28.6 ms on a 2-core machine against 4.2 ms for each distinct prompt once
(``bench/prompt_tokens.py``), and 16.5 ms of every 0.41 s step on an H200's host, which the GPU
waits for (``bench/step_phases.py``, issue 22). The mixin tokenizes each distinct prompt once and
gives every completion its own copy of its prompt's ids. Vision prompts and per-environment tool
schemas go to TRL as before.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any


def prompt_key(prompt: Any) -> Hashable | None:
    """A hashable stand-in for a text or chat prompt; None for anything else (images, tool
    calls), which is then tokenized as TRL does."""
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, list | tuple):
        return None
    try:
        key = tuple(tuple(sorted(message.items())) for message in prompt)
        hash(key)
    except (AttributeError, TypeError):  # not messages, or content that is not plain text
        return None
    return key


class DistinctPromptTokensMixin:
    """Mixed in before a TRL trainer class that has ``_tokenize_prompts``."""

    def _tokenize_prompts(self, prompts: list):
        keys = [prompt_key(p) for p in prompts]
        per_environment = getattr(self, "environment_factories", None) is not None
        if getattr(self, "_is_vlm", False) or per_environment or None in keys:
            return super()._tokenize_prompts(prompts)
        position: dict[Hashable, int] = {}  # each key's row among the distinct prompts
        distinct = []
        for key, prompt in zip(keys, prompts, strict=True):
            if key not in position:
                position[key] = len(distinct)
                distinct.append(prompt)
        if len(distinct) == len(prompts):
            return super()._tokenize_prompts(prompts)
        ids, images, fields = super()._tokenize_prompts(distinct)
        if images is not None or fields:  # per-prompt extras: leave the repeats to TRL
            return super()._tokenize_prompts(prompts)
        # Copies: a tool loop extends each completion's prompt ids on its own.
        return [list(ids[position[key]]) for key in keys], None, fields
