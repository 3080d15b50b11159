"""Watches a run's first scored samples for reward components that pay the same on all of them.

A component that never varies gives GRPO, RLOO and PPO no signal however long the run trains
(:mod:`rewards.analysis.constant_components`); the sooner the user hears it, the fewer GPU minutes
go to waste. The watch wraps the run's recorder: it passes everything through, reads the traces of
the sample rows of the first ``WATCH_STEPS`` logged steps (or the first ``WATCH_SAMPLES``
samples), and then, once, writes a :class:`storage.sqlite.schema.NoteKind` ``CONSTANT_COMPONENT``
note for each constant component (and a warning in the log). Runs that store no samples
(``training.samples_per_log: 0``) are not watched.
"""

from __future__ import annotations

import logging
from typing import Any

from engine.tracking.recorder import ForwardingRecorder, RunRecorder
from rewards.analysis.constant_components import constant_components
from rewards.spec import RewardSpec
from storage.sqlite.schema import NoteKind

logger = logging.getLogger(__name__)

WATCH_STEPS = 3
WATCH_SAMPLES = 64


class ConstantRewardWatch(ForwardingRecorder):
    """A :class:`engine.tracking.recorder.RunRecorder` that forwards to ``inner`` and watches
    samples."""

    def __init__(self, inner: RunRecorder, spec: RewardSpec) -> None:
        super().__init__(inner)
        self.spec = spec
        self._traces: list[list[dict[str, Any]]] = []
        self._steps = 0
        self._done = False

    def samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        self.inner.samples(step, rows)
        if self._done or not rows:
            return
        self._traces.extend(row["trace"] for row in rows if row.get("trace"))
        self._steps += 1
        if self._steps >= WATCH_STEPS or len(self._traces) >= WATCH_SAMPLES:
            self._judge(step)

    def _judge(self, step: int) -> None:
        self._done = True
        for found in constant_components(self._traces, spec=self.spec):
            logger.warning("Reward: %s", found.message)
            self.inner.note(step, NoteKind.CONSTANT_COMPONENT, found.message, found.to_dict())
        self._traces = []
