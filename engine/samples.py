"""Turn a captured generation batch into stored sample rows with per-component traces."""

from __future__ import annotations

from typing import Any

from engine.trainers.capture import GenerationBatch
from rewards.composer import score
from rewards.spec import RewardSpec


def completion_text(completion: Any) -> str:
    """TRL gives chat completions as ``[{"role": "assistant", "content": ...}]``."""
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        return "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in prompt)
    return str(prompt)


def sample_rows(
    spec: RewardSpec, batch: GenerationBatch, group_size: int, limit: int
) -> list[dict[str, Any]]:
    """Whole groups from the start of ``batch``, at most ``limit`` completions, with traces."""
    keep = min(len(batch.completions), max(group_size, limit - limit % group_size))
    completions = [completion_text(c) for c in batch.completions[:keep]]
    scored = score(
        spec,
        [prompt_text(p) for p in batch.prompts[:keep]],
        completions,
        answers=batch.answers[:keep],
        completion_ids=batch.completion_ids[:keep],
    )
    return [
        {
            "prompt_index": i // group_size,
            "group": i // group_size,
            "prompt": prompt_text(batch.prompts[i]),
            "completion": completions[i],
            "answer": None if batch.answers[i] is None else str(batch.answers[i]),
            "total": scored[i].total,
            "trace": [t.to_dict() for t in scored[i].trace],
            "advantage": batch.advantages[i] if i < len(batch.advantages) else None,
        }
        for i in range(keep)
    ]
