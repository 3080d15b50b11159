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
head starts at zero (see :mod:`engine.trainers.value_head`), and GAE uses ``gamma = lam = 1`` by
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
:class:`~engine.recorder.RunRecorder`, held-out evaluation through the worker's ``evaluate``,
checkpoints to ``run_dir/checkpoint-<step>/`` and the final model to ``run_dir/final``. Under
``accelerate launch`` every process samples its share of the step, gradients are averaged by
DDP, and only the main process writes.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from transformers import get_scheduler

from engine import metric_names
from engine.config import RunConfig
from engine.generation import make_runner
from engine.models import save_plain_weights
from engine.recorder import RunRecorder
from engine.run_layout import CHECKPOINT_PREFIX, FINAL_DIR
from engine.samples import sample_rows
from engine.sampling import encode_prompts, sample_completions
from engine.stop_request import StopRequest
from engine.trainers.capture import GenerationBatch
from engine.trainers.ppo_checkpoint import (
    is_peft_model,
    read_checkpoint,
    rotate_checkpoints,
    write_checkpoint,
)
from engine.trainers.ppo_math import (
    AdaptiveKLController,
    FixedKLController,
    RunningMoments,
    chunked_logprobs_entropy,
    explained_variance,
    gae,
    masked_mean,
    masked_whiten,
    policy_loss,
    token_rewards,
    value_loss,
)
from engine.trainers.value_head import PolicyWithValue, position_ids_from
from rewards.composer import ScoredSample, score
from rewards.text import prompt_text
from storage.schema import RunStatus

logger = logging.getLogger(__name__)


Evaluate = Callable[[Any, int], dict[str, float]]
# Logits elements of one no-grad forward (the rollout's and the reference's): 2^31 is 4 GiB in
# bf16, 64 completions of 220 tokens at a 151,936-token vocabulary.
INFERENCE_LOGITS_ELEMENTS = 1 << 31
Forward = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # logprobs, values, entropy: (B, T)


# ---- data and rollout tensors ----------------------------------------------------------------
def prompt_indices(num_rows: int, step: int, per_step: int, seed: int) -> list[int]:
    """Rows used at ``step`` (1-based): epochs of seeded shuffles of all rows, read in order.

    A pure function of the step, so a resumed run reads exactly the prompts it would have.
    """
    if num_rows < 1:
        raise ValueError("the dataset has no rows")
    out = []
    perms: dict[int, list[int]] = {}
    for pos in range((step - 1) * per_step, step * per_step):
        epoch = pos // num_rows
        if epoch not in perms:
            perm = list(range(num_rows))
            random.Random(f"{seed}:ppo-epoch:{epoch}").shuffle(perm)
            perms[epoch] = perm
        out.append(perms[epoch][pos % num_rows])
    return out


def rollout_tensors(
    prompt_ids: list[list[int]], completion_ids: list[list[int]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Prompts left-padded to width P, completions right-padded to width T, side by side.

    Returns:
        ``(input_ids, attention_mask, response_mask)``: (B, P + T), (B, P + T) and (B, T).
        The completion of row i is ``input_ids[i, P:]`` where ``response_mask[i]`` is 1.
    """
    P = max(len(p) for p in prompt_ids)
    T = max(1, max(len(c) for c in completion_ids))
    B = len(prompt_ids)
    input_ids = torch.full((B, P + T), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((B, P + T), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        input_ids[i, P - len(p) : P] = torch.tensor(p, dtype=torch.long)
        attention_mask[i, P - len(p) : P] = 1
        if c:
            input_ids[i, P : P + len(c)] = torch.tensor(c, dtype=torch.long)
            attention_mask[i, P : P + len(c)] = 1
    return input_ids, attention_mask, attention_mask[:, P:].clone()


def completion_forward(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    context_length: int,
    temperature: float,
    entropy: str = "grad",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities, values and entropies of the completion tokens.

    ``entropy``: ``grad``, ``detached`` (a metric only) or ``skip`` (zeros); see
    :func:`~engine.trainers.ppo_math.chunked_logprobs_entropy`.

    Memory: the float32 log-softmax runs over chunks of positions
    (:func:`~engine.trainers.ppo_math.chunked_logprobs_entropy`), so a step never holds
    float32 logits over the full vocabulary for the whole batch. The logits at position
    ``P + t - 1`` predict completion token t, and the value of the state before token t is read
    there too.

    Returns:
        ``(logprobs, values, entropy)``, each (B, T).
    """
    response = input_ids[:, context_length:]  # (B, T)
    # Positions P - 1 .. P + T - 1: the last T + 1 of the sequence; the final one predicts
    # nothing and is dropped.
    logits, values = model(input_ids, attention_mask, keep=response.shape[1] + 1)
    # (B, T, V) in the model's dtype; upcast chunk by chunk, never as a whole.
    logprobs, entropies = chunked_logprobs_entropy(
        logits[:, :-1], response, temperature, entropy=entropy
    )
    return logprobs, values[:, :-1].float(), entropies


def ppo_loss(
    logprobs: torch.Tensor,
    values: torch.Tensor,
    entropy: torch.Tensor,
    old_logprobs: torch.Tensor,
    old_values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_range: float,
    clip_range_value: float | None,
    vf_coef: float,
    entropy_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``L = L_clip + vf_coef * L_value - entropy_coef * H`` (Schulman et al. 2017, eq. 9).

    All inputs are (B, T); padding (``mask == 0``) is left out of every term.
    """
    pg_loss, clipfrac, approx_kl = policy_loss(logprobs, old_logprobs, advantages, mask, clip_range)
    vf_loss, vf_clipfrac = value_loss(values, old_values, returns, mask, clip_range_value)
    entropy_mean = masked_mean(entropy, mask)
    loss = pg_loss + vf_coef * vf_loss - entropy_coef * entropy_mean
    stats = {
        "policy_loss": pg_loss.detach(),
        "value_loss": vf_loss.detach(),
        "entropy": entropy_mean.detach(),
        "approx_kl": approx_kl,
        "clipfrac": clipfrac,
        "vf_clipfrac": vf_clipfrac,
    }
    return loss, stats


@dataclass
class Rollout:
    """One process's share of a step: completions, their scores and PPO's per-token tensors."""

    prompts: list[Any]
    answers: list[Any]
    completions: list[str]
    completion_ids: list[list[int]]
    truncated: list[bool]
    input_ids: torch.Tensor  # (B, P + T)
    attention_mask: torch.Tensor  # (B, P + T)
    response_mask: torch.Tensor  # (B, T)
    context_length: int
    scored: list[ScoredSample] = field(default_factory=list)
    sampler_logprobs: torch.Tensor | None = None  # (B, T), from the static-cache sampler
    generation_s: float = 0.0
    logprobs: torch.Tensor | None = None  # (B, T)
    values: torch.Tensor | None = None  # (B, T)
    advantages: torch.Tensor | None = None  # (B, T), before whitening
    returns: torch.Tensor | None = None  # (B, T)


# ---- the trainer ------------------------------------------------------------------------------
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
        self.accelerator = Accelerator(cpu=not torch.cuda.is_available())
        self.pad_id = tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = tokenizer.eos_token_id

        s, t = self.settings, config.training
        torch.manual_seed(t.seed)
        model = model.to(self.accelerator.device)
        self.is_peft = is_peft_model(model)
        self.uses_reference = s.kl_coef > 0 or s.kl_mode == "adaptive"
        # The reference is the starting policy, frozen: under LoRA the base with adapters off.
        self.ref_policy = None
        if self.uses_reference and not self.is_peft:
            self.ref_policy = copy.deepcopy(model).eval().requires_grad_(False)
        module = PolicyWithValue(model, s.value_model)
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
        self.model, self.optimizer = self.accelerator.prepare(module, optimizer)
        self.kl_ctl = (
            AdaptiveKLController(s.kl_coef, s.target_kl, s.kl_horizon)
            if s.kl_mode == "adaptive"
            else FixedKLController(s.kl_coef)
        )
        self.reward_moments = RunningMoments()
        self.num_tokens = 0.0
        self._last_eval_step: int | None = None
        self.runner = make_runner(
            self.policy, config.generation.backend, config.generation.max_completion_length
        )

    # ---- helpers --------------------------------------------------------------------------
    @property
    def unwrapped(self) -> PolicyWithValue:
        return self.accelerator.unwrap_model(self.model)

    @property
    def policy(self) -> Any:
        return self.unwrapped.policy

    def _agree(self, flag: bool) -> bool:
        """True on every process when ``flag`` is true on any (stops must happen together)."""
        if self.accelerator.num_processes == 1:
            return flag
        value = torch.tensor([1.0 if flag else 0.0], device=self.accelerator.device)
        return bool(self.accelerator.reduce(value, "sum").item() > 0)

    def _mean_across(self, value: float) -> float:
        if self.accelerator.num_processes == 1:
            return value
        tensor = torch.tensor([value], device=self.accelerator.device, dtype=torch.float64)
        return float(self.accelerator.reduce(tensor, "mean").item())

    def _micro_size(self, n: int) -> int:
        return min(n, self.config.training.micro_batch_size or n)

    def _inference_size(self, rollout: Rollout) -> int:
        """Rows per no-grad forward: the micro-batch, fewer when their logits would pass
        ``INFERENCE_LOGITS_ELEMENTS`` (no activations are kept there, the logits dominate)."""
        n, T = rollout.response_mask.shape
        vocab = self.policy.get_output_embeddings().weight.shape[0]
        return max(1, min(self._micro_size(n), INFERENCE_LOGITS_ELEMENTS // ((T + 1) * vocab)))

    # ---- one step ---------------------------------------------------------------------------
    def _local_jobs(self, step: int) -> list[dict[str, Any]]:
        """This process's contiguous share of the step's (prompt, sample) pairs, prompt-major."""
        t, g = self.config.training, self.config.generation
        rows = prompt_indices(len(self.train_rows), step, t.prompts_per_step, t.seed)
        jobs = [self.train_rows[i] for i in rows for _ in range(g.num_generations)]
        per_process = len(jobs) // self.accelerator.num_processes
        start = self.accelerator.process_index * per_process
        return jobs[start : start + per_process]

    def generate(self, step: int) -> Rollout:
        """Sample this process's completions for ``step``."""
        g, t = self.config.generation, self.config.training
        jobs = self._local_jobs(step)
        prompts = [row["prompt"] for row in jobs]
        seed = (t.seed * 1_000_003 + step * 1_009 + self.accelerator.process_index) % 2**31
        started = time.monotonic()
        samples = sample_completions(
            self.policy,
            self.tokenizer,
            prompts,
            num_samples=1,
            temperature=g.temperature,
            top_p=g.top_p,
            max_new_tokens=g.max_completion_length,
            seed=seed,
            batch_size=len(prompts),
            runner=self.runner,
        )
        generation_s = time.monotonic() - started
        # The prompt ids exactly as sampling encoded them, so the update sees the same context.
        prompt_ids = encode_prompts(self.tokenizer, prompts)
        completion_ids = [s.token_ids for s in samples]
        input_ids, attention_mask, response_mask = rollout_tensors(
            prompt_ids, completion_ids, self.pad_id
        )
        device = self.accelerator.device
        sampler_logprobs = None
        if all(s.logprobs is not None for s in samples):
            sampler_logprobs = torch.zeros(response_mask.shape, dtype=torch.float32)
            for i, s in enumerate(samples):
                sampler_logprobs[i, : len(s.logprobs)] = torch.tensor(s.logprobs)
            sampler_logprobs = sampler_logprobs.to(device)
        return Rollout(
            prompts=prompts,
            answers=[row.get("answer") for row in jobs],
            completions=[s.text for s in samples],
            completion_ids=completion_ids,
            truncated=[s.truncated for s in samples],
            input_ids=input_ids.to(device),
            attention_mask=attention_mask.to(device),
            response_mask=response_mask.to(device),
            context_length=input_ids.shape[1] - response_mask.shape[1],
            sampler_logprobs=sampler_logprobs,
            generation_s=generation_s,
        )

    def score(self, rollout: Rollout) -> torch.Tensor:
        """Sequence rewards (B,) from the RewardSpec; unscorable completions get 0."""
        rollout.scored = score(
            self.config.reward,
            [prompt_text(p) for p in rollout.prompts],
            rollout.completions,
            answers=rollout.answers,
            completion_ids=rollout.completion_ids,
        )
        totals = [0.0 if s.total is None else s.total for s in rollout.scored]
        return torch.tensor(totals, dtype=torch.float32, device=self.accelerator.device)

    def shape_scores(self, scores: torch.Tensor) -> torch.Tensor:
        """Normalise (batch or running statistics over all processes), then clip."""
        s = self.settings
        if s.reward_normalization != "none":
            every = torch.tensor(gather_object(scores.tolist()), dtype=torch.float64)
            if s.reward_normalization == "running":
                self.reward_moments.update(every)
                mean, std = self.reward_moments.mean, self.reward_moments.std
            else:
                mean, std = every.mean().item(), every.std(unbiased=False).item()
            scores = (scores - mean) / max(std, 1e-8)
        if s.reward_clip is not None:
            scores = scores.clamp(-s.reward_clip, s.reward_clip)
        return scores

    @property
    def _entropy_mode(self) -> str:
        """Backpropagate through the entropy only when its bonus is in the loss."""
        return "grad" if self.settings.entropy_coef > 0 else "detached"

    def single_pass(self, n: int) -> bool:
        """True when a step makes one update over all its ``n`` completions in one forward."""
        s = self.settings
        return s.ppo_epochs == 1 and s.num_minibatches == 1 and self._micro_size(n) >= n

    def evaluate_rollout(self, rollout: Rollout) -> tuple[torch.Tensor, Forward | None]:
        """Fill in the rollout's log-probabilities and values; return the reference's.

        In a single-pass step the update's own forward (with gradients) supplies them, since its
        ratio is exactly 1 at that point: one forward pass fewer per step. It is returned for
        :meth:`update` to reuse.
        """
        T = self.config.generation.temperature
        P = rollout.context_length
        n = rollout.input_ids.shape[0]
        forward = None
        if self.single_pass(n):
            forward = completion_forward(
                self.model, rollout.input_ids, rollout.attention_mask, P, T, self._entropy_mode
            )
            rollout.logprobs, rollout.values = forward[0].detach(), forward[1].detach()
        else:
            logprobs, values = [], []
            with torch.no_grad():
                for rows in torch.arange(n).split(self._inference_size(rollout)):
                    ids, mask = rollout.input_ids[rows], rollout.attention_mask[rows]
                    lp, v, _ = completion_forward(self.unwrapped, ids, mask, P, T, "skip")
                    logprobs.append(lp)
                    values.append(v)
            rollout.logprobs, rollout.values = torch.cat(logprobs), torch.cat(values)
        if not self.uses_reference:
            return rollout.logprobs.clone(), forward
        with torch.no_grad():
            ref_logprobs = [
                self._reference_logprobs(
                    rollout.input_ids[rows], rollout.attention_mask[rows], P, T
                )
                for rows in torch.arange(n).split(self._inference_size(rollout))
            ]
        return torch.cat(ref_logprobs), forward

    def _reference_logprobs(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, P: int, temperature: float
    ) -> torch.Tensor:
        response = input_ids[:, P:]  # (B, T)
        kwargs = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids_from(attention_mask),
            "use_cache": False,
            "logits_to_keep": response.shape[1] + 1,
        }
        if self.ref_policy is not None:
            logits = self.ref_policy(**kwargs).logits
        else:
            with self.policy.disable_adapter():
                logits = self.policy(**kwargs).logits
        return chunked_logprobs_entropy(logits[:, :-1], response, temperature, entropy="skip")[0]

    def update(
        self,
        rollout: Rollout,
        advantages: torch.Tensor,
        step: int,
        forward: Forward | None = None,
    ) -> dict[str, float]:
        """``ppo_epochs`` passes of shuffled minibatch updates; returns mean diagnostics.

        ``forward`` is the single-pass step's forward from :meth:`evaluate_rollout`.
        """
        s, t = self.settings, self.config.training
        mask = rollout.response_mask
        n = mask.shape[0]
        seed = (t.seed * 7_919 + step * 31 + self.accelerator.process_index) % 2**31
        gen = torch.Generator().manual_seed(seed)  # minibatch order: a function of the step
        sums: dict[str, float] = {}
        updates = 0
        grad_norms = []
        stop_early = False
        for _ in range(s.ppo_epochs):
            order = torch.randperm(n, generator=gen) if forward is None else torch.arange(n)
            for minibatch in order.tensor_split(s.num_minibatches):
                tokens = mask[minibatch].sum().clamp(min=1)
                micro_batches = minibatch.split(self._micro_size(len(minibatch)))
                self.optimizer.zero_grad(set_to_none=True)
                mb_stats: dict[str, float] = {}
                for k, rows in enumerate(micro_batches):
                    sync = k == len(micro_batches) - 1
                    context = (
                        contextlib.nullcontext() if sync else self.accelerator.no_sync(self.model)
                    )
                    with context:
                        if forward is not None:
                            (logprobs, values, entropy), forward = forward, None
                        else:
                            logprobs, values, entropy = completion_forward(
                                self.model,
                                rollout.input_ids[rows],
                                rollout.attention_mask[rows],
                                rollout.context_length,
                                self.config.generation.temperature,
                                self._entropy_mode,
                            )
                        loss, stats = ppo_loss(
                            logprobs,
                            values,
                            entropy,
                            rollout.logprobs[rows],
                            rollout.values[rows],
                            advantages[rows],
                            rollout.returns[rows],
                            mask[rows],
                            clip_range=s.clip_range,
                            clip_range_value=s.clip_range_value,
                            vf_coef=s.vf_coef,
                            entropy_coef=s.entropy_coef,
                        )
                        # Token-weighted, so micro-batches add up to the minibatch's token mean.
                        weight = mask[rows].sum() / tokens
                        self.accelerator.backward(loss * weight)
                    for key, value in stats.items():
                        mb_stats[key] = mb_stats.get(key, 0.0) + float(value * weight)
                grad_norm = self.accelerator.clip_grad_norm_(
                    self.model.parameters(), t.max_grad_norm
                )
                grad_norms.append(float(grad_norm))
                self.optimizer.step()
                updates += 1
                for key, value in mb_stats.items():
                    sums[key] = sums.get(key, 0.0) + value
                kl_now = self._mean_across(mb_stats["approx_kl"])
                if s.max_approx_kl is not None and kl_now > s.max_approx_kl:
                    stop_early = True
                    break
            if stop_early:
                logger.info(
                    "approx KL %.4f > %.4f: ending this step's updates", kl_now, s.max_approx_kl
                )
                break
        means = {key: self._mean_across(value / updates) for key, value in sums.items()}
        means["grad_norm"] = self._mean_across(sum(grad_norms) / len(grad_norms))
        means["epochs"] = updates / s.num_minibatches
        return means

    def train_step(self, step: int) -> tuple[dict[str, float], Rollout]:
        """Roll out, score, estimate advantages and update; returns the step's metrics."""
        s = self.settings
        started = time.monotonic()
        rollout = self.generate(step)
        raw_scores = self.score(rollout)
        scores = self.shape_scores(raw_scores)
        ref_logprobs, forward = self.evaluate_rollout(rollout)
        mask = rollout.response_mask
        rewards, kl = token_rewards(scores, rollout.logprobs, ref_logprobs, mask, self.kl_ctl.value)
        advantages, returns = gae(rewards, rollout.values, mask, s.gamma, s.lam)
        rollout.advantages, rollout.returns = advantages, returns
        if s.whiten_advantages:
            advantages = masked_whiten(advantages, mask)
        kl_coef, learning_rate = self.kl_ctl.value, self.scheduler.get_last_lr()[0]
        update_stats = self.update(rollout, advantages, step, forward)

        # KL to the reference per completion, sum_t (logp_t - logp_ref_t): the quantity the
        # adaptive controller steers (Ziegler et al. 2019 §2.2); a sampled estimate, so a single
        # step's mean can dip below 0.
        kl_per_sequence = gather_object(kl.sum(dim=1).tolist())
        kl_to_ref = float(np.mean(kl_per_sequence))
        if self.uses_reference:
            self.kl_ctl.update(kl_to_ref, len(kl_per_sequence))
        self.scheduler.step()

        metrics = self._rollout_metrics(rollout)
        metrics.update(
            {
                metric_names.LOSS_POLICY: update_stats["policy_loss"],
                metric_names.LOSS_VALUE: update_stats["value_loss"],
                metric_names.PPO_APPROX_KL: update_stats["approx_kl"],
                metric_names.PPO_CLIP_FRACTION: update_stats["clipfrac"],
                metric_names.PPO_VALUE_CLIP_FRACTION: update_stats["vf_clipfrac"],
                metric_names.PPO_ENTROPY: update_stats["entropy"],
                metric_names.PPO_EPOCHS: update_stats["epochs"],
                metric_names.PPO_EXPLAINED_VARIANCE: self._mean_across(
                    explained_variance(rollout.values, returns, mask)
                ),
                metric_names.PPO_VALUE_MEAN: self._mean_across(
                    masked_mean(rollout.values, mask).item()
                ),
                metric_names.PPO_RETURN_MEAN: self._mean_across(masked_mean(returns, mask).item()),
                metric_names.PPO_KL_COEF: kl_coef,
                metric_names.GRAD_NORM: update_stats["grad_norm"],
                metric_names.LEARNING_RATE: learning_rate,
            }
        )
        if self.uses_reference:
            metrics[metric_names.PPO_KL_TO_REF] = kl_to_ref
        if rollout.sampler_logprobs is not None:
            gap = masked_mean((rollout.logprobs - rollout.sampler_logprobs).abs(), mask)
            metrics[metric_names.GEN_LOGPROB_GAP] = self._mean_across(gap.item())
        metrics[metric_names.GENERATION_TIME] = self._mean_across(rollout.generation_s)
        if torch.cuda.is_available():
            metrics[metric_names.PEAK_MEMORY] = torch.cuda.max_memory_allocated() / 2**30
        step_time = time.monotonic() - started
        tokens = float(sum(gather_object([int(rollout.attention_mask.sum().item())])))
        self.num_tokens += tokens
        metrics[metric_names.STEP_TIME] = step_time
        metrics[metric_names.NUM_TOKENS] = self.num_tokens
        metrics[metric_names.TOKENS_PER_S] = tokens / step_time
        return metrics, rollout

    def _rollout_metrics(self, rollout: Rollout) -> dict[str, float]:
        """Reward, per-component and length statistics over the whole step (all processes)."""
        g = self.config.generation.num_generations
        totals = gather_object([s.total for s in rollout.scored])
        lengths = gather_object([len(ids) for ids in rollout.completion_ids])
        truncated = gather_object(list(rollout.truncated))
        raws = gather_object([[t.raw for t in s.trace] for s in rollout.scored])
        names = [t.name for t in rollout.scored[0].trace] if rollout.scored else []
        filled = np.array([0.0 if v is None else v for v in totals])
        groups = filled.reshape(-1, g) if len(filled) % g == 0 else filled.reshape(1, -1)
        metrics = {
            metric_names.REWARD_TOTAL: float(filled.mean()),
            metric_names.REWARD_TOTAL_STD: float(filled.std()),
            metric_names.REWARD_ZERO_STD_FRACTION: float((groups.std(axis=1) == 0).mean()),
            metric_names.REWARD_UNSCORED_FRACTION: float(np.mean([v is None for v in totals])),
            metric_names.COMPLETION_MEAN_LENGTH: float(np.mean(lengths)),
            metric_names.COMPLETION_CLIPPED_RATIO: float(np.mean(truncated)),
        }
        for k, name in enumerate(names):
            scored = [row[k] for row in raws if row[k] is not None]
            if scored:  # TRL's rewards/<name>/mean: the mean of the raw scores it could give
                metrics[metric_names.component_metric(name)] = float(np.mean(scored))
        return metrics

    def sample_rows(self, rollout: Rollout) -> list[dict[str, Any]]:
        """Stored samples with traces; ``value`` and ``advantage`` are those of the first token.

        ``value`` is the critic's estimate for the prompt, V(s_0); ``advantage`` is the GAE
        advantage of the first completion token before whitening.
        """
        if not self.config.training.samples_per_log:
            return []
        values = gather_object(rollout.values[:, 0].tolist())
        advantages = gather_object(rollout.advantages[:, 0].tolist())
        batch = GenerationBatch(
            prompts=gather_object(list(rollout.prompts)),
            completions=gather_object(list(rollout.completions)),
            answers=gather_object(list(rollout.answers)),
            completion_ids=gather_object(list(rollout.completion_ids)),
            advantages=advantages,
        )
        if not self.accelerator.is_main_process:
            return []
        rows = sample_rows(
            self.config.reward,
            batch,
            self.config.generation.num_generations,
            self.config.training.samples_per_log,
        )
        for i, row in enumerate(rows):
            row["value"] = values[i]
        return rows

    # ---- evaluation, checkpoints, the loop --------------------------------------------------
    def evaluate(self, step: int) -> None:
        if self.evaluate_fn is None or self._last_eval_step == step:
            return
        self._last_eval_step = step
        if self.accelerator.is_main_process:
            self.recorder.metrics(step, self.evaluate_fn(self.policy, step))

    def save_checkpoint(self, step: int) -> Path:
        """Write ``checkpoint-<step>/`` (see ``ppo_checkpoint``); rotate out old ones."""
        path = self.run_dir / f"{CHECKPOINT_PREFIX}{step}"
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            write_checkpoint(
                self.run_dir,
                step,
                before_publish=self.recorder.flush,  # the step's metrics are stored first
                policy=self.policy,
                tokenizer=self.tokenizer,
                critic=self.unwrapped.critic_state_dict(),
                optimizer=self.optimizer,
                scheduler=self.scheduler,
                state={
                    "step": step,
                    "kl_coef": self.kl_ctl.value,
                    "reward_moments": self.reward_moments.state_dict(),
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
            critic=self.unwrapped,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
        )
        self.kl_ctl.value = float(state["kl_coef"])
        self.reward_moments = RunningMoments(**state["reward_moments"])
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
            self.evaluate(0)
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
            if step % t.logging_steps == 0:
                if self.accelerator.is_main_process:
                    self.recorder.metrics(step, metrics)
                rows = self.sample_rows(rollout)
                if rows:
                    self.recorder.samples(step, rows)
            self.recorder.progress(step)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(reward=f"{metrics[metric_names.REWARD_TOTAL]:.3f}")
            stopped = self._agree(self.stop.is_set())
            out_of_time = self._agree(
                budget_s is not None and time.monotonic() - started > budget_s
            )
            if stopped:
                logger.info("Stop requested: saving a checkpoint at step %d", step)
                self.save_checkpoint(step)
                break
            if t.eval_steps and step % t.eval_steps == 0 and step < t.steps:
                self.evaluate(step)
            last = step == t.steps or out_of_time
            if t.save_steps and (step % t.save_steps == 0 or last):
                self.save_checkpoint(step)
            if out_of_time:
                logger.info("Time budget reached at step %d", step)
                break
        if bar is not None:
            bar.close()
        if stopped:
            return RunStatus.STOPPED
        self.evaluate(step)
        if self.accelerator.is_main_process:
            save_plain_weights(self.policy, self.tokenizer, self.run_dir / FINAL_DIR)
            logger.info("Saved the final model to %s", self.run_dir / FINAL_DIR)
        self.accelerator.wait_for_everyone()
        return RunStatus.COMPLETED


def train_ppo(
    config: RunConfig,
    model: Any,
    tokenizer: Any,
    train_rows: list[dict[str, Any]],
    run_dir: Path,
    recorder: RunRecorder,
    stop: StopRequest,
    *,
    evaluate: Evaluate | None = None,
    resume_from: Path | None = None,
    show_progress: bool = False,
) -> str:
    """Run ``config`` with PPO; returns ``completed`` or ``stopped`` (see the module docstring)."""
    trainer = PPOTrainer(
        config,
        model,
        tokenizer,
        train_rows,
        run_dir,
        recorder,
        stop,
        evaluate=evaluate,
        show_progress=show_progress,
    )
    return trainer.train(resume_from)


__all__ = [
    "PPOTrainer",
    "Rollout",
    "completion_forward",
    "ppo_loss",
    "prompt_indices",
    "rollout_tensors",
    "train_ppo",
]
