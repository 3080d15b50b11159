"""PPO's rollout: the step's prompts, the sampled completions as padded tensors, their scores,
and the no-grad forwards that give the rollout's log-probabilities, values and the reference's.

The logits at position ``P + t - 1`` predict completion token t, and the value of the state before
token t is read there too (Huang et al. 2024, "The N Implementation Details of RLHF with PPO").
:class:`Rollouts` does this for the trainer, over the policy it is given
(:class:`~engine.trainers.ppo.policy.PolicyParts`).
"""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from accelerate.utils import gather_object

from engine.config.algorithms import PPOSettings
from engine.config.run_config import RunConfig
from engine.generation.runner import bucket
from engine.generation.sampling import encode_prompts, sample_completions
from engine.tracking import metric_names
from engine.tracking.distributions import scored_values, step_distributions
from engine.tracking.generation_batch import GenerationBatch
from engine.tracking.samples import sample_rows
from engine.trainers.ppo.controllers import RunningMoments
from engine.trainers.ppo.formulas import group_standardize
from engine.trainers.ppo.policy import PolicyParts
from engine.trainers.ppo.value_head import completion_logprobs
from rewards.completions.text import prompt_text
from rewards.composer import ScoredSample, score

Forward = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # logprobs, values, entropy: (B, T)
# Logits elements of one no-grad forward (the rollout's and the reference's): 2^31 is 4 GiB in
# bf16, 64 completions of 220 tokens at a 151,936-token vocabulary.
INFERENCE_LOGITS_ELEMENTS = 1 << 31


def micro_size(config: RunConfig, n: int) -> int:
    """Completions per forward with gradients, of a batch of ``n``."""
    return min(n, config.training.micro_batch_size or n)


def entropy_mode(settings: PPOSettings) -> str:
    """Backpropagate through the entropy only when its bonus is in the loss."""
    return "grad" if settings.entropy_coef > 0 else "detached"


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
    prompt_ids: list[list[int]], completion_ids: list[list[int]], pad_id: int, multiple: int = 1
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Prompts left-padded to width P, completions right-padded to width T, side by side; P and
    T rounded up to a multiple of ``multiple`` (compiled layers keep one graph that way).

    Returns:
        ``(input_ids, attention_mask, response_mask)``: (B, P + T), (B, P + T) and (B, T).
        The completion of row i is ``input_ids[i, P:]`` where ``response_mask[i]`` is 1.
    """
    P = bucket(max(len(p) for p in prompt_ids), multiple)
    T = bucket(max(1, max(len(c) for c in completion_ids)), multiple)
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
    :func:`~engine.trainers.ppo.formulas.chunked_logprobs_entropy`.

    Memory: the LM head and the log-softmax run fused over tiles
    (:mod:`~engine.trainers.ppo.fused_head`), so no logits over the vocabulary are built; a model
    that scales its logits falls back to a float32 log-softmax over chunks of positions
    (:func:`~engine.trainers.ppo.formulas.chunked_logprobs_entropy`). The logits at position
    ``P + t - 1`` predict completion token t, and the value of the state before token t is read
    there too.

    Returns:
        ``(logprobs, values, entropy)``, each (B, T).
    """
    response = input_ids[:, context_length:]  # (B, T)
    # Positions P - 1 .. P + T - 1: the last T + 1 of the sequence; the final one predicts
    # nothing and is dropped.
    logprobs, values, entropies = model(
        input_ids,
        attention_mask,
        keep=response.shape[1] + 1,
        targets=response,
        temperature=temperature,
        entropy=entropy,
    )
    return logprobs, values[:, :-1].float(), entropies


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


class Rollouts:
    """Each step's rollout: sample, score, the no-grad forwards, and its metrics and samples."""

    def __init__(
        self,
        config: RunConfig,
        tokenizer: Any,
        train_rows: list[dict[str, Any]],
        parts: PolicyParts,
        runner: Any,
    ) -> None:
        self.config = config
        self.settings = config.ppo
        self.tokenizer = tokenizer
        self.train_rows = train_rows
        self.parts = parts
        self.accelerator = parts.accelerator
        self.runner = runner
        self.pad_id = tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = tokenizer.eos_token_id
        self.reward_moments = RunningMoments()  # reward normalisation "running"; checkpointed
        self.length_multiple = 1  # the widths' multiple: COMPILED_LENGTH_MULTIPLE when compiled

    def _inference_size(self, rollout: Rollout) -> int:
        """Rows per no-grad forward: the micro-batch, fewer when their logits would pass
        ``INFERENCE_LOGITS_ELEMENTS`` (no activations are kept there, the logits dominate)."""
        n, T = rollout.response_mask.shape
        vocab = self.parts.policy.get_output_embeddings().weight.shape[0]
        return max(
            1, min(micro_size(self.config, n), INFERENCE_LOGITS_ELEMENTS // ((T + 1) * vocab))
        )

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
            self.parts.policy,
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
        # The prompt ids exactly as sampling encoded them, so the update sees the same context;
        # each dataset row once, not once per sample (a chat template renders in Python).
        encoded: dict[int, list[int]] = {}
        for row in jobs:
            if id(row) not in encoded:
                encoded[id(row)] = encode_prompts(self.tokenizer, [row["prompt"]])[0]
        prompt_ids = [encoded[id(row)] for row in jobs]
        completion_ids = [s.token_ids for s in samples]
        input_ids, attention_mask, response_mask = rollout_tensors(
            prompt_ids, completion_ids, self.pad_id, self.length_multiple
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

    def score(self, rollout: Rollout, step: int) -> torch.Tensor:
        """Sequence rewards (B,) from the RewardSpec with the weights in force at ``step``;
        unscorable completions get 0."""
        rollout.scored = score(
            self.config.reward.at_step(step),
            [prompt_text(p) for p in rollout.prompts],
            rollout.completions,
            answers=rollout.answers,
            completion_ids=rollout.completion_ids,
        )
        totals = [0.0 if s.total is None else s.total for s in rollout.scored]
        return torch.tensor(totals, dtype=torch.float32, device=self.accelerator.device)

    def shape_scores(self, scores: torch.Tensor) -> torch.Tensor:
        """Normalise (batch, running or per-prompt statistics over all processes), then clip."""
        s = self.settings
        if s.reward_normalization != "none":
            every = torch.tensor(gather_object(scores.tolist()), dtype=torch.float64)
            if s.reward_normalization == "group":  # a prompt's group may span two processes
                start = self.accelerator.process_index * len(scores)
                shaped = group_standardize(every, self.config.generation.num_generations)
                scores = shaped[start : start + len(scores)].to(scores.dtype).to(scores.device)
            else:
                if s.reward_normalization == "running":
                    self.reward_moments.update(every)
                    mean, std = self.reward_moments.mean, self.reward_moments.std
                else:
                    mean, std = every.mean().item(), every.std(unbiased=False).item()
                scores = (scores - mean) / max(std, 1e-8)
        if s.reward_clip is not None:
            scores = scores.clamp(-s.reward_clip, s.reward_clip)
        return scores

    def single_pass(self, n: int) -> bool:
        """True when a step makes one update over all its ``n`` completions in one forward."""
        s = self.settings
        return s.ppo_epochs == 1 and s.num_minibatches == 1 and micro_size(self.config, n) >= n

    def evaluate_rollout(self, rollout: Rollout) -> tuple[torch.Tensor, Forward | None]:
        """Fill in the rollout's log-probabilities and values; return the reference's.

        In a single-pass step the update's own forward (with gradients) supplies them, since its
        ratio is exactly 1 at that point: one forward pass fewer per step. It is returned for
        :meth:`~engine.trainers.ppo.update.PolicyUpdate.update` to reuse.
        """
        T = self.config.generation.temperature
        P = rollout.context_length
        n = rollout.input_ids.shape[0]
        forward = None
        if self.single_pass(n):
            forward = completion_forward(
                self.parts.model,
                rollout.input_ids,
                rollout.attention_mask,
                P,
                T,
                entropy_mode(self.settings),
            )
            rollout.logprobs, rollout.values = forward[0].detach(), forward[1].detach()
        else:
            logprobs, values = [], []
            with torch.no_grad():
                for rows in torch.arange(n).split(self._inference_size(rollout)):
                    ids, mask = rollout.input_ids[rows], rollout.attention_mask[rows]
                    lp, v, _ = completion_forward(self.parts.unwrapped, ids, mask, P, T, "skip")
                    logprobs.append(lp)
                    values.append(v)
            rollout.logprobs, rollout.values = torch.cat(logprobs), torch.cat(values)
        if not self.parts.uses_reference:
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
        ref_policy, policy = self.parts.ref_policy, self.parts.policy
        reference = ref_policy if ref_policy is not None else policy
        adapters_off = policy.disable_adapter() if ref_policy is None else contextlib.nullcontext()
        # The policy under FSDP gathers its LM head only in its own forward: the logits path.
        fused = not (self.parts.fsdp and ref_policy is None)
        with adapters_off:
            keep = response.shape[1] + 1  # positions P - 1 .. P + T - 1
            return completion_logprobs(
                reference, input_ids, attention_mask, keep, response, temperature, fused=fused
            )[0]

    def metrics(self, rollout: Rollout) -> dict[str, float]:
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

    def step_records(
        self, rollout: Rollout
    ) -> tuple[list[dict[str, Any]], dict[str, list[float | None]]]:
        """Stored samples with traces and the whole batch's distributions (none off the main
        process or at ``samples_per_log: 0``). ``value`` is the critic's V(s_0) for the prompt,
        ``advantage`` the GAE advantage of the first completion token before whitening."""
        if not self.config.training.samples_per_log:
            return [], {}
        values = gather_object(rollout.values[:, 0].tolist())
        advantages = gather_object(rollout.advantages[:, 0].tolist())
        batch = GenerationBatch(
            prompts=gather_object(list(rollout.prompts)),
            completions=gather_object(list(rollout.completions)),
            answers=gather_object(list(rollout.answers)),
            completion_ids=gather_object(list(rollout.completion_ids)),
            advantages=advantages,
            scored=gather_object(list(rollout.scored)),  # scored once, for the reward too
        )
        if not self.accelerator.is_main_process:
            return [], {}
        rows = sample_rows(
            self.config.reward,
            batch,
            self.config.generation.num_generations,
            self.config.training.samples_per_log,
        )
        for i, row in enumerate(rows):
            row["value"] = values[i]
        return rows, step_distributions(batch, *scored_values(batch.scored or []))
