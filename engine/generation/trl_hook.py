"""Plug the static-cache sampler into TRL 1.16's GRPOTrainer and RLOOTrainer.

Both trainers sample through ``_generate_single_turn(prompt_ids, images, multimodal_fields,
...)``, given one prompt's token ids per completion (a group's prompt repeated G times). The
mixin answers that call with :class:`~engine.generation.runner.GenerationRunner` when the run's
``generation.backend`` resolves to ``compiled`` and the model is supported, and leaves every
other case (vLLM, images, sampling knobs it lacks, sharded models) to TRL.

It also times the sampling (``perf/generation_s``), records peak GPU memory
(``perf/peak_memory_gib``) and compares the sampler's log-probabilities of the sampled tokens
with those the loss recomputes (``gen/logprob_gap``): they ride in the generation batch under
:data:`SAMPLER_LOGPROBS`, row for row with ``completion_ids``, so TRL's shuffle and split carry
them to the loss with their completions. On the CPU the loss forward runs each of a group's
prompts once (:mod:`engine.trainers.shared_prompt`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import torch

from engine.generation import make_runner
from engine.generation.runner import Generation, GenerationRunner
from engine.tracking import metric_names
from engine.trainers.shared_prompt import logps_with_shared_prompts, shares_prompts

if TYPE_CHECKING:
    from engine.trainers.finite_updates import UpdateGuard

logger = logging.getLogger(__name__)


# The generation batch's key for the sampler's log-probabilities, (B, T) like completion_ids.
# Not TRL's "sampling_per_token_logps", which would switch on its vLLM importance correction.
SAMPLER_LOGPROBS = "studio_sampler_logprobs"


class FastGenerationMixin:
    """Mixed in before a TRL trainer class; :meth:`use_generation_backend` switches it on."""

    _runner: GenerationRunner | None = None
    _sampled: Generation | None = None
    _loss_inputs: dict[str, Any] | None = None
    update_guard: UpdateGuard | None = None  # set by the trainer's builder
    # GRPOTrainer's hook returns (completion_ids, logprobs); RLOOTrainer's returns the ids only.
    _hook_returns_logprobs = True

    @property
    def generation_runner(self) -> GenerationRunner | None:
        """The static-cache runner the rollouts sample with; None where TRL samples."""
        return self._runner

    def use_generation_backend(self, backend: str, prompt_width: int = 0) -> None:
        """Sample with the static-cache runner where ``backend`` asks for it (``make_runner``);
        ``prompt_width``: the run's longest prompt in tokens, which its first cache holds."""
        if getattr(self, "use_vllm", False):
            return
        if getattr(self, "is_fsdp_enabled", False) or getattr(self, "is_deepspeed_enabled", False):
            logger.warning("generation.backend %s: sharded weights, using TRL's sampler", backend)
            return
        model = self.accelerator.unwrap_model(self.model)
        self._runner = make_runner(model, backend, self.max_completion_length)
        if self._runner is not None:
            self._runner.prompt_width = prompt_width
            if getattr(self, "tools", None) and self._runner.fill_rows:
                logger.info(
                    "Tool rollouts sample on the compiled runner: every turn on one graph of "
                    "the first turn's rows (later turns filled up), prompts up to %d tokens",
                    prompt_width,
                )

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
            # A tool loop calls this hook again and extends the completions: no row match then.
            self._sampled = None if getattr(self, "tools", None) else out
            # TRL's own path hands back no log-probabilities either (its loss does not use them
            # outside vLLM's importance-sampling correction).
            ids = out.completion_ids
            result = (ids, None) if self._hook_returns_logprobs else ids
        mode = "train" if self.model.training else "eval"
        self._metrics[mode][metric_names.GENERATION_TIME].append(time.perf_counter() - started)
        return result

    def _calculate_rewards(self, *args, **kwargs):
        started = time.perf_counter()  # a slow step's time may be a slow reward (math parsing)
        rewards = super()._calculate_rewards(*args, **kwargs)
        mode = "train" if self.model.training else "eval"
        self._metrics[mode][metric_names.REWARD_TIME].append(time.perf_counter() - started)
        return rewards

    def _generate_and_score_completions(self, inputs):
        self._sampled = None
        output = super()._generate_and_score_completions(inputs)
        sampled, self._sampled = self._sampled, None
        if not self.model.training:
            return output
        # A step's update cost follows its width; a width's first visit may build kernels.
        width = output["prompt_ids"].shape[1] + output["completion_ids"].shape[1]
        self._metrics["train"][metric_names.UPDATE_WIDTH].append(width)
        if sampled is not None:
            rows = sampler_rows(sampled, output["completion_ids"], output["completion_mask"])
            if rows is not None:
                output[SAMPLER_LOGPROBS] = rows
        return output

    def _compute_loss(self, model, inputs):
        self._loss_inputs = inputs
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._loss_inputs = None
        if self.update_guard is not None:  # says, if the update is skipped, whether this was why
            self.update_guard.losses.add(loss)
        if torch.cuda.is_available():
            peak = torch.cuda.max_memory_allocated() / 2**30
            self._metrics["train"][metric_names.PEAK_MEMORY].append(peak)
        return loss

    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, **kw
    ):
        out = None
        attention = getattr(
            self.accelerator.unwrap_model(model).config, "_attn_implementation", None
        )
        if shares_prompts(attention, input_ids, batch_size, kw):
            out = logps_with_shared_prompts(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                kw.get("compute_entropy", False),
                self.accelerator.autocast(),
            )
        if out is None:
            out = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, **kw
            )
        sampled = None if self._loss_inputs is None else self._loss_inputs.get(SAMPLER_LOGPROBS)
        if sampled is not None:
            mask = self._loss_inputs["completion_mask"]
            diff = ((out[0].detach().float() - sampled).abs() * mask).sum()
            total, count = torch.stack([diff, mask.sum().float()]).tolist()
            if count:  # every row masked (truncated completions): nothing to compare
                self._metrics["train"][metric_names.GEN_LOGPROB_GAP].append(total / count)
        return out


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
