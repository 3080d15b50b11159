"""What our GRPO and RLOO trainers take beyond TRL's arguments: one value, given to the
constructor (nothing is set on a trainer after it is built)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.trainers.finite_updates import UpdateGuard
from rewards.spec import RewardSpec


@dataclass(frozen=True)
class StudioExtras:
    """``backend``: ``generation.backend`` (``make_runner`` decides whether our sampler runs);
    ``prompt_width``: the longest prompt in tokens, which the sampler's first cache holds;
    ``update_guard`` drops (and reports) an update whose gradients are not finite;
    ``before_publish`` runs before each checkpoint becomes visible;
    ``schedule``: the run's reward spec when it has weight schedules, whose weights are set
    before each step and handed to ``record_metrics(step, metrics)``;
    ``world_model_coeff`` and ``world_loss_normalization``: the agent runs' world-model loss
    (GRPO only, :mod:`.world_model`); ``rollout``: ``training.rollout``, sync or async
    (:mod:`.async_rollout`)."""

    backend: str = "auto"
    prompt_width: int = 0
    update_guard: UpdateGuard = field(default_factory=UpdateGuard)
    before_publish: Callable[[], None] | None = None
    schedule: RewardSpec | None = None
    record_metrics: Callable[[int, dict[str, float]], None] = lambda step, metrics: None
    world_model_coeff: float = 0.0
    world_loss_normalization: str = "selected_tokens"
    rollout: str = "sync"
