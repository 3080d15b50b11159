"""The Preview's completions: several samples of each of several prompts, in chunks, within a
bound on one call's time and the threads no training run holds.

The same sampler a run uses: plain completions (:func:`engine.generation.sampling.sample`), or,
when tools are named, rollouts through TRL's tool loop (call, result, answer) as a run with
``tools.builtin`` samples them, the tokenizer checked to carry tool calls as a run's is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.config.tools import ToolSettings
from engine.data.prompts import Prompt
from engine.generation.sampling import sample
from engine.generation.settings import SamplingSettings
from engine.runtime.devices import bounded_threads

#: Most samples drawn in one call of the sampler (prompts per chunk x samples per prompt).
CHUNK_SAMPLES = 32

#: ``sample(model, prompts, settings)``: one chunk's samples (each with its ``prompt_index``).
Sampler = Callable[[Any, Sequence[Prompt], SamplingSettings], list[Any]]
#: ``progress(fraction, text)``.
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Completions:
    """The samples drawn, ordered by prompt; ``done`` prompts of those asked (fewer when the
    call's time ran out: the prompts done so far are kept)."""

    samples: list[Any]
    done: int


def completion_sampler(tokenizer: Any, model_name: str, tools: Sequence[str]) -> Sampler:
    """Plain completions, or tool rollouts when ``tools`` names built-in tools.

    Raises:
        ConfigError: the tools cannot run with this model (its field is ``tools``' problem).
    """
    if not tools:
        return lambda model, prompts, settings: sample(model, tokenizer, prompts, settings)
    from engine.config.toolbox import toolbox_for
    from engine.tools.rollout import sample_tool_rollouts
    from engine.tools.template import prepare_tool_tokenizer

    prepare_tool_tokenizer(tokenizer, model_name)
    toolbox = toolbox_for(ToolSettings(builtin=list(tools)))
    return lambda model, prompts, settings: sample_tool_rollouts(
        model,
        tokenizer,
        prompts,
        toolbox,
        settings,
    )


def sample_in_chunks(
    model: Any,
    prompts: Sequence[Prompt],
    settings: SamplingSettings,
    sampler: Sampler,
    threads: Callable[[], int],
    deadline: float | None = None,
    progress: Progress | None = None,
) -> Completions:
    """``settings.num_samples`` samples of each prompt, a chunk of prompts at a time (chunk
    ``c`` seeded ``settings.seed`` plus its first prompt's index), on ``threads()`` intra-op
    threads, asked again at each chunk (a run may have started or ended since the last one),
    until ``time.monotonic()`` passes ``deadline``."""
    progress = progress or (lambda fraction, text: None)
    per_call = max(1, CHUNK_SAMPLES // settings.num_samples)
    seed = settings.seed
    samples: list[Any] = []
    for start in range(0, len(prompts), per_call):
        if start and deadline is not None and time.monotonic() > deadline:
            return Completions(samples, start)
        progress(
            0.1 + 0.9 * start / len(prompts),
            f"Generating: prompt {start + 1} of {len(prompts)}",
        )
        chunk_settings = replace(settings, seed=(seed + start) % 2**31)
        with bounded_threads(threads()):
            chunk = sampler(model, prompts[start : start + per_call], chunk_settings)
        samples.extend(replace(s, prompt_index=s.prompt_index + start) for s in chunk)
    return Completions(samples, len(prompts))
