"""Our static-cache sampler inside TRL 1.16's GRPOTrainer and RLOOTrainer, and what the step
records around it.

Both trainers sample through ``_generate_single_turn(prompt_ids, images, multimodal_fields,
...)``, given one prompt's token ids per completion (a group's prompt repeated G times). Our
trainers answer that call with :class:`~engine.generation.runner.GenerationRunner` when the run's
``generation.backend`` resolves to ``compiled`` and the model is supported, and leave every
other case (vLLM, images, sampling knobs it lacks, sharded models) to TRL.

The step also times the sampling (``perf/generation_s``) and the scoring, records peak GPU
memory (``perf/peak_memory_gib``) and compares the sampler's log-probabilities of the sampled
tokens with those the loss recomputes (``gen/logprob_gap``): they ride in the generation batch
under :data:`SAMPLER_LOGPROBS`, row for row with ``completion_ids``, so TRL's shuffle and split
carry them to the loss with their completions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from engine.generation import make_runner
from engine.generation.runner import Generation, GenerationRunner
from engine.generation.settings import SamplingSettings
from engine.tracking import metric_names

logger = logging.getLogger(__name__)


# The generation batch's key for the sampler's log-probabilities, (B, T) like completion_ids.
# Not TRL's "sampling_per_token_logps", which would switch on its vLLM importance correction.
SAMPLER_LOGPROBS = "studio_sampler_logprobs"


def attach_runner(trainer: Any, backend: str, prompt_width: int) -> GenerationRunner | None:
    """The static-cache runner ``trainer`` samples with where ``backend`` asks for it
    (``make_runner``); None where TRL samples (vLLM, sharded weights, unsupported models).
    ``prompt_width``: the run's longest prompt in tokens, which its first cache holds."""
    if trainer.use_vllm:
        return None
    if trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled:
        logger.warning("generation.backend %s: sharded weights, using TRL's sampler", backend)
        return None
    model = trainer.accelerator.unwrap_model(trainer.model)
    runner = make_runner(model, backend, trainer.max_completion_length)
    if runner is not None:
        runner.prompt_width = prompt_width
        if getattr(trainer, "tools", None) and runner.fill_rows:
            logger.info(
                "Tool rollouts sample on the compiled runner: every turn on one graph of the "
                "first turn's rows (later turns filled up), prompts up to %d tokens",
                prompt_width,
            )
    return runner


def runner_applies(trainer: Any, runner: GenerationRunner | None, images: Any) -> bool:
    """Whether ``runner`` can sample this turn: text only and sampling knobs it has."""
    plain_sampling = (
        not trainer.top_k
        and trainer.min_p is None
        and trainer.repetition_penalty == 1.0
        and not trainer.args.generation_kwargs
    )
    return runner is not None and images is None and plain_sampling


def sample(
    runner: GenerationRunner,
    trainer: Any,
    prompt_ids: list[list[int]],
    switch_to_eval: bool = True,
) -> Generation:
    """One turn of completions for ``prompt_ids`` with the trainer's sampling settings
    (``switch_to_eval``: :meth:`GenerationRunner.generate`'s)."""
    settings = SamplingSettings(
        temperature=trainer.temperature,
        top_p=trainer.top_p,
        max_new_tokens=trainer.max_completion_length,
    )
    # Unseeded: a step's rollouts draw from the running generator, as TRL's sampler does.
    return runner.generate(
        prompt_ids,
        settings,
        eos_ids=trainer.eos_token_ids,
        pad_id=trainer._tokenizer.pad_token_id,
        switch_to_eval=switch_to_eval,
    )


@contextmanager
def timed(metrics: dict[str, list[float]], name: str) -> Iterator[None]:
    """Appends the seconds the block took to ``metrics[name]``."""
    started = time.perf_counter()
    yield
    metrics[name].append(time.perf_counter() - started)


def with_step_extras(
    output: dict[str, Any], sampled: Generation | None, metrics: dict[str, list[float]]
) -> dict[str, Any]:
    """A training step's generation batch with its width recorded (a step's update cost
    follows it; a width's first visit may build kernels) and, where the sampler's rows are
    TRL's completions, the sampler's log-probabilities under :data:`SAMPLER_LOGPROBS`."""
    width = output["prompt_ids"].shape[1] + output["completion_ids"].shape[1]
    metrics[metric_names.UPDATE_WIDTH].append(width)
    if sampled is not None:
        rows = sampler_rows(sampled, output["completion_ids"], output["completion_mask"])
        if rows is not None:
            output[SAMPLER_LOGPROBS] = rows
    return output


def record_logprob_gap(
    metrics: dict[str, list[float]], logps: torch.Tensor, loss_inputs: dict[str, Any]
) -> None:
    """``gen/logprob_gap``: the mean absolute difference between the loss's log-probabilities
    ``logps`` (B, T) and the sampler's, over the tokens the loss counts."""
    sampled = loss_inputs.get(SAMPLER_LOGPROBS)
    if sampled is None:
        return
    mask = loss_inputs["completion_mask"]
    diff = ((logps.detach().float() - sampled).abs() * mask).sum()
    total, count = torch.stack([diff, mask.sum().float()]).tolist()
    if count:  # every row masked (truncated completions): nothing to compare
        metrics[metric_names.GEN_LOGPROB_GAP].append(total / count)


def record_peak_memory(metrics: dict[str, list[float]]) -> None:
    """``perf/peak_memory_gib`` on a GPU: the most memory the step has held so far."""
    if torch.cuda.is_available():
        metrics[metric_names.PEAK_MEMORY].append(torch.cuda.max_memory_allocated() / 2**30)


def sampler_rows(
    sampled: Generation, completion_ids: torch.Tensor, completion_mask: torch.Tensor
) -> torch.Tensor | None:
    """The sampler's log-probabilities laid out like TRL's padded ``completion_ids`` (B, T), or
    None when its rows are not those completions (the gap would compare unrelated tokens)."""
    device = completion_ids.device
    n, width = completion_ids.shape
    steps = sampled.token_rows.shape[1]
    if sampled.token_rows.shape[0] != n or steps > width:
        return None
    # Compared where the loss counts tokens (TRL may mask whole truncated rows).
    mask = completion_mask[:, :steps].bool()
    ours = sampled.token_rows.to(device).masked_fill(~mask, 0)
    if not torch.equal(ours, completion_ids[:, :steps].masked_fill(~mask, 0)):
        return None
    rows = torch.zeros(n, width, dtype=torch.float32, device=device)
    rows[:, :steps] = sampled.logprob_rows.to(device)
    return rows
