"""Watches a PPO run's critic: a note when its explained variance stays below 0 after warm-up.

Explained variance ``1 - Var(R - V) / Var(R)`` (cleanrl ``ppo.py``) is 1 for a critic that
predicts the returns, 0 for one that predicts a constant, and below 0 for one whose predictions
vary in ways the returns do not: its advantages ``R - V`` are then noisier than a constant
baseline's, and the policy learns more slowly than it would with none. The watch wraps the run's
recorder, passes everything through, reads ``ppo/explained_variance`` from the metrics of the
steps after ``ppo.value_warmup_steps``, and once it has been below 0 at ``PATIENCE`` logged steps
in a row writes one :class:`storage.sqlite.schema.NoteKind` ``CRITIC_NOT_LEARNING`` note (and a
warning in the log), with the values it saw.
"""

from __future__ import annotations

import logging
import math

from engine.tracking import metric_names
from engine.tracking.recorder import ForwardingRecorder, RunRecorder
from storage.sqlite.schema import NoteKind

logger = logging.getLogger(__name__)

PATIENCE = 5  # logged steps in a row: one step's estimate is noisy on a small batch


def critic_message(values: list[float], warmup_steps: int) -> str:
    """The note's text: what was seen, what it means, and what to try."""
    after = f"after the {warmup_steps}-step warm-up" if warmup_steps else "from the start"
    return (
        f"the critic's explained variance stayed below 0 for {len(values)} steps {after} "
        f"(last {values[-1]:.2f}): its values predict the returns worse than a constant, so "
        "its advantages add noise. Try ppo.value_warmup_steps (train the critic alone first), "
        "a higher or lower ppo.value_learning_rate, or ppo.reward_normalization."
    )


class CriticWatch(ForwardingRecorder):
    """A :class:`engine.tracking.recorder.RunRecorder` that forwards to ``inner`` and watches
    the critic's explained variance."""

    def __init__(self, inner: RunRecorder, warmup_steps: int = 0, patience: int = PATIENCE) -> None:
        super().__init__(inner)
        self.warmup_steps = warmup_steps
        self.patience = patience
        self._below: list[float] = []
        self._done = False

    def metrics(self, step: int, values: dict[str, float]) -> None:
        self.inner.metrics(step, values)
        ev = values.get(metric_names.PPO_EXPLAINED_VARIANCE)
        if self._done or ev is None or step <= self.warmup_steps or not math.isfinite(ev):
            return
        self._below = [*self._below, ev] if ev < 0 else []
        if len(self._below) >= self.patience:
            self._done = True
            message = critic_message(self._below, self.warmup_steps)
            logger.warning("PPO: %s", message)
            detail = {
                "explained_variance": [round(v, 4) for v in self._below],
                "warmup_steps": self.warmup_steps,
            }
            self.inner.note(step, NoteKind.CRITIC_NOT_LEARNING, message, detail)
