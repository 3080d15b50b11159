"""PPO for causal language models: Reward Studio's own actor-critic trainer.

The classic RLHF recipe (Ziegler et al. 2019, "Fine-Tuning Language Models from Human
Preferences"; Ouyang et al. 2022, "Training language models to follow instructions", §3.5),
optimised with PPO (Schulman et al. 2017) and GAE (Schulman et al. 2016). Each step:

1. **Rollout.** ``training.prompts_per_step`` prompts, each sampled ``generation.num_generations``
   times at the generation settings GRPO uses.
2. **Score.** The RewardSpec's weighted total from :func:`rewards.composer.score` (the same
   numbers TRL's reward functions and weights give); a completion no component could score
   gets 0 and is counted in ``reward/unscored_fraction``. Optional normalisation, then clipping.
3. **Per-token rewards.** ``r_t = -beta * (logp_t - logp_ref_t)`` against the frozen reference
   policy (the adapters switched off under LoRA, else a frozen copy), the score added on the
   last generated token; beta fixed or adapted toward a target KL (Ziegler et al. §2.2).
4. **Advantages.** GAE over completion tokens, optionally whitened over the rollout.
5. **Update.** ``ppo.ppo_epochs`` passes over shuffled minibatches: clipped surrogate, clipped
   value loss, entropy bonus, gradient-norm clipping; the passes stop early once the approximate
   KL to the rollout policy exceeds ``ppo.max_approx_kl``.

Details follow "The N Implementation Details of RLHF with PPO" (Huang et al. 2024): logits are
divided by the sampling temperature before log-probabilities are taken, dropout is off (the
model stays in eval mode, so rollout and update log-probabilities agree), the value of token t
is read at the hidden state that predicts it, Adam uses eps 1e-5. Where we depart: the value
head starts at zero (see :mod:`engine.trainers.ppo.value_head`), and GAE uses ``gamma = lam = 1`` by
default, as Open-Reasoner-Zero (Hu et al. 2025) found best for reasoning rewards given once at
the end: with ``lam = 0.95`` a 90-token completion passes ``0.95^90 = 1%`` of the final reward
back to its first token, leaving the working in ``<think>`` to an untrained critic.

Defaults that train the default model on a CPU (``PPOSettings``): one pass over the whole
rollout per step (``ppo_epochs = num_minibatches = 1``; generation dominates a step's cost, so
more passes cost more than they return there, and a single pass lets one forward serve both
the rollout's log-probabilities and the update), a fixed KL coefficient 0.05 (TRL's former
``PPOTrainer`` default), ``vf_coef`` 0.1 on a shared backbone, the critic's head at lr 1e-3
(at the policy's 5e-5 it would need thousands of steps to reach the reward's scale), whitened
advantages, no reward normalisation or clipping (the reward presets are already of order 1).

The trainer drives the worker's objects directly: metrics and samples go to the
:class:`~engine.tracking.recorder.RunRecorder`, held-out evaluation through the worker's
``evaluate``, checkpoints to ``run_dir/checkpoint-<step>/``; the worker saves the final model
after :meth:`PPOTrainer.train`, as it does after TRL's trainers. Under ``accelerate launch``
every process samples its share of the step, gradients are averaged by DDP, and only the main
process writes.

The parts, composed here: :class:`~engine.trainers.ppo.policy.PolicyParts` (the policy and
critic, the reference, the accelerator), :class:`~engine.trainers.ppo.rollout.Rollouts` (steps 1
to 3's sampling, scoring and forwards), :class:`~engine.trainers.ppo.update.PolicyUpdate` (step 5)
and the formulas of :mod:`engine.trainers.ppo.formulas`; this module is the loop.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator, DistributedType
from accelerate.utils import gather_object
from transformers import get_scheduler

from engine.config.run_config import RunConfig
from engine.generation import make_runner
from engine.runtime.compile_cache import log_compile_time
from engine.runtime.heap import freeze_long_lived
from engine.runtime.layout import checkpoint_dir
from engine.runtime.oom_fault import inject_fault
from engine.runtime.stop_request import StopRequest
from engine.tracking import metric_names
from engine.tracking.recorder import RunRecorder
from engine.trainers.callbacks import checkpoint_saved, checkpoint_started
from engine.trainers.compiled_layers import (
    COMPILED_LENGTH_MULTIPLE,
    compile_decoder_layers,
    compiles_on,
)
from engine.trainers.finite_updates import UpdateGuard
from engine.trainers.masked_rows import repair_empty_rows
from engine.trainers.ppo.checkpoint import (
    is_peft_model,
    read_checkpoint,
    rotate_checkpoints,
    write_checkpoint,
)
from engine.trainers.ppo.controllers import (
    AdaptiveKLController,
    FixedKLController,
    RunningMoments,
)
from engine.trainers.ppo.formulas import (
    explained_variance,
    gae,
    masked_mean,
    masked_whiten,
    token_rewards,
)
from engine.trainers.ppo.policy import PolicyParts
from engine.trainers.ppo.rollout import Rollout, Rollouts
from engine.trainers.ppo.update import PolicyUpdate
from engine.trainers.ppo.value_head import PolicyWithValue
from engine.trainers.weight_schedule import scheduled_weights
from storage.sqlite.schema import RunPhase, RunStatus

logger = logging.getLogger(__name__)


Evaluate = Callable[[Any, int], dict[str, float]]


class PPOTrainer:
    """Runs ``config`` with PPO through the worker's recorder, stop request and evaluation."""

    def __init__(
        self,
        config: RunConfig,
        model: Any,
        tokenizer: Any,
        train_rows: list[dict[str, Any]],
        run_dir: Path,
        recorder: RunRecorder,
        stop: StopRequest,
        *,
        evaluate: Evaluate | None = None,
        show_progress: bool = False,
    ) -> None:
        if not train_rows:
            raise ValueError("the training dataset has no rows")
        self.config = config
        self.settings = config.ppo
        self.tokenizer = tokenizer
        self.train_rows = train_rows
        self.run_dir = Path(run_dir)
        self.recorder = recorder
        self.stop = stop
        self.evaluate_fn = evaluate
        self.show_progress = show_progress
        self.last_step = 0  # the step train() ended at
        self.accelerator = Accelerator(cpu=not torch.cuda.is_available())

        s, t = self.settings, config.training
        torch.manual_seed(t.seed)
        model = model.to(self.accelerator.device)
        repair_empty_rows(model)  # before the copies below (reference, critic), which keep it
        self.is_peft = is_peft_model(model)
        uses_reference = s.kl_coef > 0 or s.kl_mode == "adaptive"
        # The reference is the starting policy, frozen: under LoRA the base with adapters off.
        ref_policy = None
        if uses_reference and not self.is_peft:
            ref_policy = copy.deepcopy(model).eval().requires_grad_(False)
        fsdp = self.accelerator.distributed_type == DistributedType.FSDP
        module = PolicyWithValue(model, s.value_model, fused_head=not fsdp)
        module.eval()  # no dropout: rollout and update log-probabilities must agree
        critic = [p for n, p in module.named_parameters() if n.startswith("value_")]
        actor = [
            p
            for n, p in module.named_parameters()
            if p.requires_grad and not n.startswith("value_")
        ]
        groups = [{"params": actor, "lr": t.learning_rate}]
        groups.append({"params": critic, "lr": s.value_learning_rate or t.learning_rate})
        optimizer = torch.optim.AdamW(groups, lr=t.learning_rate, eps=1e-5, weight_decay=0.0)
        self.scheduler = get_scheduler(
            t.lr_scheduler, optimizer, num_warmup_steps=t.warmup_steps, num_training_steps=t.steps
        )
        prepared, self.optimizer = self.accelerator.prepare(module, optimizer)
        self.parts = PolicyParts(self.accelerator, prepared, ref_policy, uses_reference, fsdp)
        self.kl_ctl = (
            AdaptiveKLController(s.kl_coef, s.target_kl, s.kl_horizon)
            if s.kl_mode == "adaptive"
            else FixedKLController(s.kl_coef)
        )
        self.num_tokens = 0.0
        self._last_eval_step: int | None = None
        self.runner = make_runner(
            self.policy, config.generation.backend, config.generation.max_completion_length
        )
        self.rollouts = Rollouts(config, tokenizer, train_rows, self.parts, self.runner)
        if hasattr(evaluate, "runner"):  # the worker's held-out evaluation: on the rollouts' graph
            evaluate.runner = self.runner
        guard = UpdateGuard(recorder)
        guard.watch_head(self.policy)
        self.updater = PolicyUpdate(config, self.parts, self.optimizer, guard)
        if compiles_on(self.accelerator.device, fsdp):
            for policy in (self.policy, ref_policy):
                if policy is not None:
                    compile_decoder_layers(policy)
            self.rollouts.length_multiple = COMPILED_LENGTH_MULTIPLE

    @property
    def policy(self) -> Any:
        return self.parts.policy

    def train_step(self, step: int) -> tuple[dict[str, float], Rollout]:
        """Roll out, score, estimate advantages and update; returns the step's metrics."""
        s, mean_across = self.settings, self.parts.mean_across
        started = time.monotonic()
        rollout = self.rollouts.generate(step)
        scoring = time.monotonic()
        raw_scores = self.rollouts.score(rollout, step)
        reward_s = time.monotonic() - scoring
        scores = self.rollouts.shape_scores(raw_scores)
        ref_logprobs, forward = self.rollouts.evaluate_rollout(rollout)
        mask = rollout.response_mask
        rewards, kl = token_rewards(scores, rollout.logprobs, ref_logprobs, mask, self.kl_ctl.value)
        advantages, returns = gae(rewards, rollout.values, mask, s.gamma, s.lam)
        rollout.advantages, rollout.returns = advantages, returns
        if s.whiten_advantages:
            advantages = masked_whiten(advantages, mask)
        kl_coef, learning_rate = self.kl_ctl.value, self.scheduler.get_last_lr()[0]
        update_stats = self.updater.update(rollout, advantages, step, forward)

        # KL to the reference per completion, sum_t (logp_t - logp_ref_t): the quantity the
        # adaptive controller steers (Ziegler et al. 2019 §2.2); a sampled estimate, so a single
        # step's mean can dip below 0.
        kl_per_sequence = gather_object(kl.sum(dim=1).tolist())
        kl_to_ref = float(np.mean(kl_per_sequence))
        if self.parts.uses_reference:
            self.kl_ctl.update(kl_to_ref, len(kl_per_sequence))
        self.scheduler.step()

        metrics = self.rollouts.metrics(rollout)
        metrics.update(scheduled_weights(self.config.reward, step))  # reward/weight/<name>
        metrics.update(
            {
                metric_names.LOSS_POLICY: update_stats["policy_loss"],
                metric_names.LOSS_VALUE: update_stats["value_loss"],
                metric_names.PPO_APPROX_KL: update_stats["approx_kl"],
                metric_names.POLICY_CLIP_RATIO: update_stats["clipfrac"],
                metric_names.PPO_VALUE_CLIP_FRACTION: update_stats["vf_clipfrac"],
                metric_names.POLICY_ENTROPY: update_stats["entropy"],
                metric_names.PPO_EPOCHS: update_stats["epochs"],
                metric_names.PPO_EXPLAINED_VARIANCE: mean_across(
                    explained_variance(rollout.values, returns, mask)
                ),
                metric_names.PPO_VALUE_MEAN: mean_across(masked_mean(rollout.values, mask).item()),
                metric_names.PPO_RETURN_MEAN: mean_across(masked_mean(returns, mask).item()),
                metric_names.PPO_KL_COEF: kl_coef,
                metric_names.GRAD_NORM: update_stats["grad_norm"],
                metric_names.LEARNING_RATE: learning_rate,
            }
        )
        if self.parts.uses_reference:
            metrics[metric_names.PPO_KL_TO_REF] = kl_to_ref
            metrics[metric_names.POLICY_KL] = mean_across(masked_mean(kl, mask).item())
        if rollout.sampler_logprobs is not None:
            gap = masked_mean((rollout.logprobs - rollout.sampler_logprobs).abs(), mask)
            metrics[metric_names.GEN_LOGPROB_GAP] = mean_across(gap.item())
        metrics[metric_names.UPDATE_WIDTH] = rollout.input_ids.shape[1]
        metrics[metric_names.GENERATION_TIME] = mean_across(rollout.generation_s)
        metrics[metric_names.REWARD_TIME] = mean_across(reward_s)
        if torch.cuda.is_available():
            metrics[metric_names.PEAK_MEMORY] = torch.cuda.max_memory_allocated() / 2**30
        step_time = time.monotonic() - started
        tokens = float(sum(gather_object([int(rollout.attention_mask.sum().item())])))
        self.num_tokens += tokens
        metrics[metric_names.STEP_TIME] = step_time
        metrics[metric_names.NUM_TOKENS] = self.num_tokens
        metrics[metric_names.TOKENS_PER_S] = tokens / step_time
        return metrics, rollout

    # ---- evaluation, checkpoints, the loop --------------------------------------------------
    def evaluate(self, step: int, then: RunPhase | None = None) -> None:
        """Evaluate at ``step`` (once a step), then record the phase ``then`` (None: the
        caller records what comes next)."""
        if self.evaluate_fn is None or self._last_eval_step == step:
            return
        self._last_eval_step = step
        if self.accelerator.is_main_process:
            self.recorder.metrics(step, self.evaluate_fn(self.policy, step))
        if then is not None:
            self.recorder.phase(then, step)

    def save_checkpoint(self, step: int) -> Path:
        """Write ``checkpoint-<step>/`` (see ``ppo_checkpoint``); rotate out old ones."""
        path = checkpoint_dir(self.run_dir, step)
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            write_checkpoint(
                self.run_dir,
                step,
                before_publish=self.recorder.flush,  # the step's metrics are stored first
                policy=self.policy,
                tokenizer=self.tokenizer,
                critic=self.parts.unwrapped.critic_state_dict(),
                optimizer=self.optimizer,
                scheduler=self.scheduler,
                state={
                    "step": step,
                    "kl_coef": self.kl_ctl.value,
                    "reward_moments": self.rollouts.reward_moments.state_dict(),
                    "num_tokens": self.num_tokens,
                },
            )
            rotate_checkpoints(self.run_dir, self.config.training.save_total_limit)
            logger.info("Saved %s", path.name)
        self.accelerator.wait_for_everyone()
        return path

    def load_checkpoint(self, path: Path) -> int:
        """Restore everything :meth:`save_checkpoint` wrote; returns the checkpoint's step."""
        state = read_checkpoint(
            path,
            policy=self.policy,
            critic=self.parts.unwrapped,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
        )
        self.kl_ctl.value = float(state["kl_coef"])
        self.rollouts.reward_moments = RunningMoments(**state["reward_moments"])
        self.num_tokens = float(state["num_tokens"])
        return int(state["step"])

    def train(self, resume_from: Path | None = None) -> str:
        """Train until ``training.steps``, the time budget or a stop; returns the run status."""
        t = self.config.training
        step = 0
        if resume_from is not None:
            step = self.load_checkpoint(resume_from)
            logger.info("Resumed PPO at step %d", step)
        else:
            self.evaluate(0, then=RunPhase.FIRST_GENERATION)
        bar = None
        if self.show_progress and self.accelerator.is_main_process:
            from tqdm.auto import tqdm

            bar = tqdm(total=t.steps, initial=step, desc="ppo", unit="step")
        budget_s = None if t.time_budget_minutes is None else t.time_budget_minutes * 60.0
        started = time.monotonic()  # the budget is for training, not the first evaluation
        stopped = False
        while step < t.steps:
            step += 1
            metrics, rollout = self.train_step(step)
            inject_fault()  # STUDIO_INJECT_OOM's test hook: out of memory once, at the first step
            log_compile_time()
            freeze_long_lived()
            if step % t.logging_steps == 0:
                if self.accelerator.is_main_process:
                    self.recorder.metrics(step, metrics)
                rows, distributions = self.rollouts.step_records(rollout)
                if rows:
                    self.recorder.samples(step, rows)
                if distributions:
                    self.recorder.distributions(step, distributions)
            self.recorder.progress(step)
            self.recorder.phase(RunPhase.TRAINING, step)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(reward=f"{metrics[metric_names.REWARD_TOTAL]:.3f}")
            stopped = self.parts.agree(self.stop.is_set())
            out_of_time = self.parts.agree(
                budget_s is not None and time.monotonic() - started > budget_s
            )
            if stopped:
                logger.info("Stop requested: saving a checkpoint at step %d", step)
                self.recorder.phase(RunPhase.STOPPING, step)
                self.save_checkpoint(step)
                break
            if t.eval_steps and step % t.eval_steps == 0 and step < t.steps:
                self.evaluate(step, then=RunPhase.TRAINING)
            last = step == t.steps or out_of_time
            if t.save_steps and (step % t.save_steps == 0 or last):
                checkpoint_started(self.recorder, step)
                self.save_checkpoint(step)
                if not last:
                    checkpoint_saved(self.recorder, step)
            if out_of_time:
                logger.info("Time budget reached at step %d", step)
                break
        if bar is not None:
            bar.close()
        if stopped:
            return RunStatus.STOPPED
        self.evaluate(step)
        self.last_step = step  # the worker saves the final model (engine/run/final_model.py)
        return RunStatus.COMPLETED
