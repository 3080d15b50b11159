"""Picking the micro-batch a card holds, and the estimate told in words for the Train form and
the command line."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.config.run_config import RunConfig
from engine.models.shape import ModelShape, model_shape
from engine.planning.memory import CARD_BUDGET, PROMPT_TOKENS, MemoryEstimate, estimate, size


def micro_batch_choices(config: RunConfig) -> list[int]:
    """Micro-batch sizes the batch rule allows: divisors of the completions per device."""
    per_device = config.completions_per_step // config.training.processes
    return [d for d in range(per_device, 0, -1) if per_device % d == 0]


def fitting_micro_batch(
    config: RunConfig,
    shape: ModelShape,
    budget_bytes: float,
    prompt_tokens: int = PROMPT_TOKENS,
) -> int:
    """The largest allowed micro-batch whose estimated peak fits ``budget_bytes`` (1 if none
    does: the smallest step the config allows)."""
    for micro in micro_batch_choices(config):
        peak = estimate(config, shape, micro_batch=micro, prompt_tokens=prompt_tokens).peak
        if peak <= budget_bytes:
            return micro
    return 1


def with_default_micro_batch(
    config: RunConfig, card_bytes: int, prompt_tokens: int = PROMPT_TOKENS
) -> RunConfig:
    """``config`` with ``training.micro_batch_size`` picked for a card of ``card_bytes`` (and
    prompts of ``prompt_tokens``) when the user left it empty; unchanged otherwise, or when
    the model's shape is unknown."""
    if config.training.micro_batch_size is not None:
        return config
    shape = model_shape(config.model)
    if shape is None:
        return config
    size = fitting_micro_batch(config, shape, CARD_BUDGET * card_bytes, prompt_tokens)
    training = replace(config.training, micro_batch_size=size)
    return replace(config, training=training)


# Rows read for the longest prompt: enough for any uploaded file, bounded for hub datasets.
PROMPT_SCAN_ROWS = 5000


def longest_prompt(tokenizer: Any, rows: list[dict[str, Any]]) -> int:
    """Tokens of the longest prompt among the first ``PROMPT_SCAN_ROWS`` rows, as the model
    reads them (chat template or plain text): TRL pads a micro-batch to its longest prompt."""
    from engine.generation.sampling import encode_prompts

    encoded = encode_prompts(tokenizer, [row["prompt"] for row in rows[:PROMPT_SCAN_ROWS]])
    return max((len(ids) for ids in encoded), default=PROMPT_TOKENS)


def local_card_bytes() -> int | None:
    """Total memory of this process's first visible GPU, or None without CUDA. Total, not
    free: every process of a multi-GPU run must pick the same micro-batch."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(0).total_memory


def run_estimate(
    config: RunConfig, card_bytes: int | None, prompt_tokens: int = PROMPT_TOKENS
) -> MemoryEstimate | None:
    """The estimate of ``config`` as it will run on a card of ``card_bytes`` (None: on the
    CPU) with prompts of ``prompt_tokens``: an empty micro-batch on a card at the size the run
    will pick. None where the model's shape is unknown."""
    shape = model_shape(config.model)
    if shape is None:
        return None
    on_gpu = card_bytes is not None
    if on_gpu:
        config = with_default_micro_batch(config, card_bytes, prompt_tokens)
    return estimate(config, shape, on_gpu=on_gpu, prompt_tokens=prompt_tokens)


def describe(config: RunConfig, card_bytes: int | None, prompt_tokens: int | None = None) -> str:
    """The estimate's line for ``config`` on a card of ``card_bytes`` (None: on the CPU), or
    why there is none, for prompts of ``prompt_tokens`` (None: ``PROMPT_TOKENS`` assumed, as
    said in the line). An empty micro-batch on a card shows the size the run will pick."""
    tokens = PROMPT_TOKENS if prompt_tokens is None else prompt_tokens
    est = run_estimate(config, card_bytes, tokens)
    if est is None:
        return (
            f"No memory estimate: the config of {config.model.name_or_path!r} is not on this "
            "machine."
        )
    line = est.summary()
    line += f" Prompts of {tokens} tokens{' assumed' if prompt_tokens is None else ''}."
    if card_bytes is not None and est.peak > CARD_BUDGET * card_bytes:
        line += (
            f" That is above {CARD_BUDGET:.0%} of the {size(card_bytes)} card: the run may run "
            "out of memory."
        )
    elif card_bytes is not None and config.training.micro_batch_size is None:
        line += (
            f" The micro-batch ({est.micro_batch}) is picked to fit "
            f"{CARD_BUDGET:.0%} of the {size(card_bytes)} card."
        )
    return line
