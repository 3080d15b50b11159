"""Tokenize each of a step's distinct prompts once.

TRL 1.16's GRPOTrainer and RLOOTrainer render and tokenize the prompt of every completion
(``_tokenize_prompts``): a step of 32 prompts x 8 completions runs the chat template 256 times
over 32 prompts. With SmolLM2's tokenizer and the built-in task's worked-example prompts that
took 28.6 ms on a 2-core machine against 4.2 ms for each distinct prompt once
(``bench/prompt_tokens.py``), and 16.5 ms of every 0.41 s step on an H200's host, which the GPU
waits for (``bench/step_phases.py``, issue 22). The trainers' ``_tokenize_prompts`` tokenizes each
distinct prompt once and gives every completion its own copy of its prompt's ids. Vision
prompts and per-environment tool schemas go to TRL as before.
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


def prompt_rows(prompts: list) -> tuple[list, list[int]] | None:
    """The distinct prompts in first-seen order and each prompt's row among them; None when
    every prompt is distinct or one has no plain-text key (then TRL tokenizes them all)."""
    keys = [prompt_key(p) for p in prompts]
    if None in keys:
        return None
    position: dict[Hashable, int] = {}  # each key's row among the distinct prompts
    distinct, rows = [], []
    for key, prompt in zip(keys, prompts, strict=True):
        if key not in position:
            position[key] = len(distinct)
            distinct.append(prompt)
        rows.append(position[key])
    return None if len(distinct) == len(prompts) else (distinct, rows)


def repeat_rows(ids: list[list[int]], rows: list[int]) -> list[list[int]]:
    """Each prompt's ids from its distinct prompt's, as copies: a tool loop extends each
    completion's prompt ids on its own."""
    return [list(ids[row]) for row in rows]
