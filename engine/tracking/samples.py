"""Turn a captured generation batch into stored sample rows with per-component traces, and the
batch's distributions.

A tool rollout (TRL's messages: assistant turns with ``tool_calls``, tool results) is scored as
it was generated, so the agent components see its calls, and keeps its whole conversation in the
row's ``extra["conversation"]``; ``completion`` holds its assistant text, as for any run. Each row
keeps its completion's length in tokens (``tokens``), which the truncation limit counts.
"""

from __future__ import annotations

from typing import Any

from engine.config.run_config import RunConfig
from engine.tracking.distributions import reward_values, scored_values, step_distributions
from engine.tracking.generation_batch import GenerationBatch
from engine.tracking.recorder import RunRecorder
from rewards.completions.text import completion_text, prompt_text
from rewards.completions.tool_calls import is_conversation
from rewards.composer import ScoredSample, score
from rewards.spec import RewardSpec


def scored_batch(
    spec: RewardSpec, batch: GenerationBatch, keep: int | None = None
) -> list[ScoredSample]:
    """The first ``keep`` completions of ``batch`` (all by default) scored under ``spec``, with
    traces: the batch's own scores where the trainer gave them (``batch.scored``)."""
    keep = len(batch.completions) if keep is None else keep
    if batch.scored is not None:
        return batch.scored[:keep]
    return score(
        spec,
        [prompt_text(p) for p in batch.prompts[:keep]],
        batch.completions[:keep],  # as generated: a tool rollout's calls are scored too
        answers=batch.answers[:keep],
        completion_ids=batch.completion_ids[:keep],
    )


def sample_rows(
    spec: RewardSpec, batch: GenerationBatch, group_size: int, limit: int
) -> list[dict[str, Any]]:
    """Whole groups from the start of ``batch``, at most ``limit`` completions, with traces.

    A batch that carries its scores (``batch.scored``: the trainer scored it with ``spec``
    already) is not scored again.
    """
    keep = min(len(batch.completions), max(group_size, limit - limit % group_size))
    completions = [completion_text(c) for c in batch.completions[:keep]]
    prompts = [prompt_text(p) for p in batch.prompts[:keep]]
    scored = scored_batch(spec, batch, keep)
    return [
        {
            "prompt_index": i // group_size,
            "group": i // group_size,
            "prompt": prompts[i],
            "completion": completions[i],
            "answer": None if batch.answers[i] is None else str(batch.answers[i]),
            "total": scored[i].total,
            "trace": [t.to_dict() for t in scored[i].trace],
            "advantage": batch.advantages[i] if i < len(batch.advantages) else None,
            "extra": _conversation(batch.completions[i]),
            "tokens": len(batch.completion_ids[i]) if i < len(batch.completion_ids) else None,
        }
        for i in range(keep)
    ]


def _conversation(completion: Any) -> dict[str, Any]:
    """``{"conversation": messages}`` for a rollout with tool turns, else nothing."""
    if not is_conversation(completion):
        return {}
    messages = [m for m in completion if isinstance(m, dict)]
    if not any(m.get("role") == "tool" or m.get("tool_calls") for m in messages):
        return {}
    keys = ("role", "content", "tool_calls", "name")
    return {"conversation": [{k: m[k] for k in keys if k in m} for m in messages]}


class SampleStore:
    """Stores the newest generation batch of a TRL trainer at each logged step: its first whole
    groups as traced samples, and all of it as distributions (``training.samples_per_log: 0``
    stores neither).

    The distributions come from the scores the trainer already has (TRL's per-function
    rewards, or PPO's scored rollouts): only the stored samples are scored here, for their
    traces, as before the distributions.
    """

    def __init__(self, config: RunConfig, recorder: RunRecorder) -> None:
        self.config = config
        self.recorder = recorder
        self.trainer: Any = None  # set once the trainer exists; its callbacks start later

    def store(self, step: int) -> None:
        batch = self.trainer.pop_generation_batch() if self.trainer is not None else None
        if batch is None or not self.config.training.samples_per_log:
            return
        spec = self.config.reward.at_step(step)  # the weights in force at this step
        rows = sample_rows(
            spec,
            batch,
            self.config.generation.num_generations,
            self.config.training.samples_per_log,
        )
        self.recorder.samples(step, rows)
        if batch.rewards_per_func is not None:
            totals, verdicts = reward_values(batch.rewards_per_func, spec)
        else:
            totals, verdicts = scored_values(scored_batch(spec, batch))
        self.recorder.distributions(step, step_distributions(batch, totals, verdicts))
