"""A RewardSpec as TRL reward functions, and as a standalone module for a user's own script.

``to_trl(spec)`` gives what TRL 1.16's ``GRPOTrainer`` and ``RLOOTrainer`` take directly::

    funcs, weights = to_trl(spec)
    trainer = GRPOTrainer(model=..., reward_funcs=funcs,
                          args=GRPOConfig(..., reward_weights=weights), train_dataset=...)

Each function is the component object itself: called as TRL calls it
(``fn(prompts=..., completions=..., completion_ids=..., **columns)``), named by its metric name
(so TRL logs ``rewards/<name>/mean``), picklable for TRL's async rollout worker. The gold answer
comes from the dataset column named by the component's ``gold_column`` (``answer`` by default).
TRL's aggregation (``nansum`` of weighted rewards, ``None`` skipped) equals the composer's total.

``export_module(spec)`` writes the same reward as one Python file that imports only public
libraries (math-verify, py3langid, google-re2, numpy); see :mod:`rewards.export`.
"""

from __future__ import annotations

from collections.abc import Callable

from rewards.export import export_module
from rewards.spec import RewardSpec

__all__ = ["export_module", "to_trl"]


def to_trl(spec: RewardSpec) -> tuple[list[Callable], list[float]]:
    """``(reward_funcs, reward_weights)`` for TRL, one pair per enabled component; a scheduled
    weight is its starting value (``engine.trainers.weight_schedule`` moves it each step)."""
    built = spec.build()
    return [fn for fn, _ in built], [float(w) for _, w in built]
