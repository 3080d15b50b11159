"""RLOO through TRL 1.16 (Ahmadian et al. 2024, "Back to Basics"): TRL's RLOOTrainer with our
sampler, each distinct prompt tokenized once, each generation batch kept for the sample view
and checkpoints published whole.

Each override below is one TRL (or transformers) method, in the order a step calls them; the
work is in the helpers beside this module. ``tests/engine/test_trl_contract.py`` pins the
signatures they rely on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trl import RLOOTrainer

from engine.generation.runner import Generation
from engine.tracking import metric_names
from engine.tracking.generation_batch import GenerationBatch
from engine.trainers.trl.async_rollout import (
    attach_rollout_ahead,
    corrected_logps,
    sample_turn,
    submit_next,
)
from engine.trainers.trl.capture import gathered_batch, with_advantages
from engine.trainers.trl.checkpoints import staged_save
from engine.trainers.trl.extras import StudioExtras
from engine.trainers.trl.prompt_tokens import prompt_rows, repeat_rows
from engine.trainers.trl.sampling import (
    record_logprob_gap,
    record_peak_memory,
    runner_applies,
    timed,
    with_step_extras,
)
from engine.trainers.trl.setup import finish_setup
from engine.trainers.trl.shared_prompt import shared_prompt_logps


class StudioRLOOTrainer(RLOOTrainer):
    """TRL's RLOOTrainer; ``extras``: what our runs add (:class:`StudioExtras`; RLOO has no
    tools, so no world-model loss)."""

    def __init__(self, *args: Any, extras: StudioExtras | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.extras = extras or StudioExtras()
        self._sampled: Generation | None = None  # the sampler's rows of this generation batch
        self._captured_batch: GenerationBatch | None = None  # for pop_generation_batch
        self._loss_inputs: dict[str, Any] | None = None  # the micro-batch of the running loss
        self._saving_into: str | None = None  # the staging folder while a checkpoint is saved
        self.generation_runner = finish_setup(self, self.extras)
        # training.rollout async: the worker sampling the next step, the loop's batches ahead.
        self.rollout_ahead, self.batch_lookahead = attach_rollout_ahead(
            self, self.generation_runner, self.extras.rollout
        )

    def pop_generation_batch(self) -> GenerationBatch | None:
        """The batch generated since the last call (with its advantages), or ``None``."""
        batch, self._captured_batch = self._captured_batch, None
        return with_advantages(batch, self._logs)

    def _mode_metrics(self) -> dict[str, list[float]]:
        return self._metrics["train" if self.model.training else "eval"]

    # 0. A step's batches from the loop (an async run keeps them a step ahead).
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        if self.batch_lookahead is None:
            return super().get_batch_samples(epoch_iterator, num_batches, device)
        batches = self.batch_lookahead.take(epoch_iterator, num_batches)
        return batches, self._get_num_items_in_batch(batches, device)

    # 1. A step's generation batch: sampled, scored, its advantages computed.
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        self._sampled = None
        output = super()._generate_and_score_completions(inputs)
        sampled, self._sampled = self._sampled, None
        if not self.model.training:
            return output
        submit_next(self)  # where the sampling call did not (a KL penalty's reference pass)
        return with_step_extras(output, sampled, self._metrics["train"])

    # 2. Each completion's prompt ids: each distinct prompt tokenized once.
    def _tokenize_prompts(self, prompts: list) -> tuple:
        plan = None if self._is_vlm else prompt_rows(prompts)
        if plan is None:
            return super()._tokenize_prompts(prompts)
        distinct, rows = plan
        ids, images, fields = super()._tokenize_prompts(distinct)
        if images is not None or fields:  # per-prompt extras: leave the repeats to TRL
            return super()._tokenize_prompts(prompts)
        return repeat_rows(ids, rows), None, fields

    # 3. The completions (RLOOTrainer's hook returns the ids only).
    def _generate_single_turn(self, prompt_ids, images, multimodal_fields):
        if not runner_applies(self, self.generation_runner, images):
            with timed(self._mode_metrics(), metric_names.GENERATION_TIME):
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields)
        self._sampled = sample_turn(self, prompt_ids)
        return self._sampled.completion_ids

    # 4. The reward functions' scores of the batch (a slow step may be a slow reward).
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        with timed(self._mode_metrics(), metric_names.REWARD_TIME):
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        batch = gathered_batch(inputs, prompts, completions, completion_ids_list, rewards)
        if self.accelerator.is_main_process:
            self._captured_batch = batch
        return rewards

    # 5. One micro-batch's loss.
    def _compute_loss(self, model, inputs):
        self._loss_inputs = inputs
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._loss_inputs = None
        self.extras.update_guard.losses.add(loss)  # a skipped update says if this was why
        record_peak_memory(self._metrics["train"])
        return loss

    # 6. Per-token log-probabilities: each distinct prompt run once where that is exact.
    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, **kwargs
    ):
        out = shared_prompt_logps(
            self, model, input_ids, attention_mask, logits_to_keep, batch_size, kwargs
        )
        if out is None:
            out = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, **kwargs
            )
        inputs = self._loss_inputs
        if inputs is not None:  # the loss's own forward, never the reference's
            record_logprob_gap(self._metrics["train"], out[0], inputs)
            out = (corrected_logps(self, out[0], inputs), *out[1:])
        return out

    # 7. A checkpoint, written aside and published whole.
    def _save_checkpoint(self, model, trial) -> None:
        run_dir = Path(self._get_output_dir(trial))
        with staged_save(self, run_dir, self.extras.before_publish) as staging:
            self._saving_into = staging
            try:
                super()._save_checkpoint(model, trial)
            finally:
                self._saving_into = None

    def _get_output_dir(self, trial) -> str:
        return self._saving_into or super()._get_output_dir(trial)
