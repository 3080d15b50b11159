"""Turn a captured generation batch into stored sample rows with per-component traces."""

from __future__ import annotations

from typing import Any

from engine.trainers.capture import GenerationBatch
from rewards.composer import score
from rewards.spec import RewardSpec
from rewards.text import completion_text, prompt_text


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
    scored = batch.scored[:keep] if batch.scored is not None else None
    if scored is None:
        scored = score(
            spec,
            prompts,
            completions,
            answers=batch.answers[:keep],
            completion_ids=batch.completion_ids[:keep],
        )
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
        }
        for i in range(keep)
    ]
