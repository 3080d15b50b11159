"""Plug the static-cache sampler into TRL 1.16's GRPOTrainer and RLOOTrainer.

Both trainers sample through ``_generate_single_turn(prompt_ids, images, multimodal_fields,
...)``, given one prompt's token ids per completion (a group's prompt repeated G times). The
mixin answers that call with :class:`~engine.generation.runner.GenerationRunner` when the run's
``generation.backend`` resolves to ``compiled`` and the model is supported, and leaves every
other case (vLLM, images, sampling knobs it lacks, sharded models) to TRL.

It also times the sampling (``perf/generation_s``), records peak GPU memory
(``perf/peak_memory_gib``) and compares the sampler's log-probabilities of the sampled tokens
with those the loss recomputes (``gen/logprob_gap``), keyed by (prompt, completion) tokens since
TRL shuffles and splits the batch before the loss sees it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import torch

from engine import metric_names
from engine.generation import make_runner
from engine.generation.runner import GenerationRunner

logger = logging.getLogger(__name__)


class FastGenerationMixin:
    """Mixed in before a TRL trainer class; :meth:`use_generation_backend` switches it on."""

    _runner: GenerationRunner | None = None
    _sampler_logprobs: dict[tuple[tuple[int, ...], tuple[int, ...]], list[float]] | None = None
    _loss_inputs: dict[str, Any] | None = None
    # GRPOTrainer's hook returns (completion_ids, logprobs); RLOOTrainer's returns the ids only.
    _hook_returns_logprobs = True

    def use_generation_backend(self, backend: str) -> None:
        """Sample with the static-cache runner where ``backend`` asks for it (``make_runner``)."""
        if getattr(self, "use_vllm", False):
            return
        if getattr(self, "is_fsdp_enabled", False) or getattr(self, "is_deepspeed_enabled", False):
            logger.warning("generation.backend %s: sharded weights, using TRL's sampler", backend)
            return
        model = self.accelerator.unwrap_model(self.model)
        self._runner = make_runner(model, backend, self.max_completion_length)

    def _runner_applies(self, images: Any) -> bool:
        plain_sampling = (
            not self.top_k
            and self.min_p is None
            and self.repetition_penalty == 1.0
            and not self.args.generation_kwargs
        )
        return self._runner is not None and images is None and plain_sampling

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, *args, **kwargs):
        started = time.perf_counter()
        if not self._runner_applies(images):
            result = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, *args, **kwargs
            )
        else:
            out = self._runner.generate(
                prompt_ids,
                max_new_tokens=self.max_completion_length,
                temperature=self.temperature,
                top_p=self.top_p,
                eos_ids=self.eos_token_ids,
                pad_id=self._tokenizer.pad_token_id,
            )
            self._sampler_logprobs = {
                (tuple(p), tuple(c)): lp
                for p, c, lp in zip(prompt_ids, out.completion_ids, out.logprobs, strict=True)
            }
            # TRL's own path hands back no log-probabilities either (its loss does not use them
            # outside vLLM's importance-sampling correction).
            ids = out.completion_ids
            result = (ids, None) if self._hook_returns_logprobs else ids
        mode = "train" if self.model.training else "eval"
        self._metrics[mode][metric_names.GENERATION_TIME].append(time.perf_counter() - started)
        return result

    def _compute_loss(self, model, inputs):
        self._loss_inputs = inputs
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._loss_inputs = None
        if torch.cuda.is_available():
            peak = torch.cuda.max_memory_allocated() / 2**30
            self._metrics["train"][metric_names.PEAK_MEMORY].append(peak)
        return loss

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, *args, **kw):
        out = super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, *args, **kw
        )
        if self._loss_inputs is not None and self._sampler_logprobs:
            gap = logprob_gap(self._loss_inputs, out[0].detach(), self._sampler_logprobs)
            if gap is not None:
                self._metrics["train"][metric_names.GEN_LOGPROB_GAP].append(gap)
        return out


def logprob_gap(
    inputs: dict[str, Any],
    trainer_logprobs: torch.Tensor,
    sampler_logprobs: dict[tuple[tuple[int, ...], tuple[int, ...]], list[float]],
) -> float | None:
    """Mean |sampler - trainer| log-probability over the completion tokens of ``inputs`` that
    the sampler produced; None when none of them are known."""
    prompts = inputs["prompt_ids"].tolist()
    prompt_mask = inputs["prompt_mask"].tolist()
    completions = inputs["completion_ids"].tolist()
    completion_mask = inputs["completion_mask"].tolist()
    trainer = trainer_logprobs.float().cpu()
    total, count = 0.0, 0
    for i, (p, pm, c, cm) in enumerate(
        zip(prompts, prompt_mask, completions, completion_mask, strict=True)
    ):
        key = (
            tuple(t for t, m in zip(p, pm, strict=True) if m),
            tuple(t for t, m in zip(c, cm, strict=True) if m),
        )
        sampled = sampler_logprobs.get(key)
        if sampled is None:
            continue
        n = len(sampled)
        total += (trainer[i, :n] - torch.tensor(sampled)).abs().sum().item()
        count += n
    return total / count if count else None
