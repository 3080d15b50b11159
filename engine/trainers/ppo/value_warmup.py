"""The critic's warm-up: the first ``ppo.value_warmup_steps`` steps update the critic alone.

A critic that starts at zero gives the policy the batch's whitened returns as advantages, then
the noise of a head that has seen a few batches; training it alone first is the value
pre-training of Zheng et al. 2023 ("Secrets of RLHF in Large Language Models, Part I") and VAPO
(Yue et al. 2025). Here the policy's parameter group steps at learning rate 0 (AdamW's decay is
0 too), so the rollouts, the losses and the optimizer's state are those of a normal step and
only the policy's weights stay put.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

ACTOR_GROUP = 0  # the trainer builds the optimizer with the policy's group first


@contextlib.contextmanager
def critic_only(optimizer: Any, active: bool) -> Iterator[None]:
    """While ``active``, ``optimizer.step()`` leaves the policy's parameter group unchanged."""
    if not active:
        yield
        return
    group = optimizer.param_groups[ACTOR_GROUP]
    lr = group["lr"]
    group["lr"] = 0.0
    try:
        yield
    finally:
        group["lr"] = lr


def in_warmup(step: int, warmup_steps: int) -> bool:
    """Whether ``step`` (1-based) is one of the critic's warm-up steps."""
    return step <= warmup_steps
