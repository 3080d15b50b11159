"""The TrainerCallback that streams a TRL run into Reward Studio's storage."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from engine.runtime.compile_cache import log_compile_time
from engine.runtime.heap import freeze_long_lived
from engine.runtime.oom_fault import inject_fault
from engine.runtime.stop_request import StopRequest
from engine.tracking import metric_names
from engine.tracking.recorder import RunRecorder
from storage.sqlite.schema import RunPhase

logger = logging.getLogger(__name__)


def checkpoint_started(recorder: RunRecorder, step: int) -> None:
    """A periodic checkpoint save begins: a phase of the run, and a line of its log."""
    logger.info("Saving a checkpoint at step %d", step)
    recorder.phase(RunPhase.SAVING_CHECKPOINT, step)


def checkpoint_saved(recorder: RunRecorder, step: int) -> None:
    """Back to training after a periodic checkpoint save."""
    logger.info("Checkpoint saved at step %d; training on", step)
    recorder.phase(RunPhase.TRAINING, step)


class StudioCallback(TrainerCallback):
    """Writes metrics (namespaced), sample traces, step progress and held-out evaluations.

    ``store_samples(step)`` stores the latest generation batch; ``evaluate(model, step)`` runs
    the held-out evaluation and returns its metrics. Both are given by the worker so this class
    only decides *when* things happen.
    """

    def __init__(
        self,
        recorder: RunRecorder,
        stop: StopRequest,
        *,
        store_samples: Callable[[int], None],
        evaluate: Callable[[Any, int], dict[str, float]] | None,
        eval_steps: int,
        time_budget_s: float | None = None,
    ) -> None:
        self.recorder = recorder
        self.stop = stop
        self.store_samples = store_samples
        self.evaluate = evaluate
        self.eval_steps = eval_steps
        self.time_budget_s = time_budget_s
        self._started = time.monotonic()
        self._last_num_tokens: float | None = None
        self._last_eval_step: int | None = None
        self._periodic_save = False  # TRL is about to save a checkpoint of save_steps

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if state.global_step == 0:
            self._run_eval(kwargs["model"], 0, then=RunPhase.FIRST_GENERATION)
        self._started = time.monotonic()  # the budget is for training, not the first eval

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        logs = logs or {}
        if metric_names.is_run_summary(logs):
            logger.info("Training finished: %s", logs)
            return
        step = state.global_step
        values = {
            metric_names.from_trl(key): float(value)
            for key, value in logs.items()
            if isinstance(value, (int, float)) and math.isfinite(value)
        }
        self._add_throughput(values)
        if values:
            self.recorder.metrics(step, values)
        self.store_samples(step)

    def _add_throughput(self, values: dict[str, float]) -> None:
        # TRL logs the cumulative token count and the step time; the rate is what users read.
        tokens = values.get(metric_names.NUM_TOKENS)
        step_time = values.get(metric_names.STEP_TIME)
        if tokens is not None and self._last_num_tokens is not None and step_time:
            values[metric_names.TOKENS_PER_S] = (tokens - self._last_num_tokens) / step_time
        if tokens is not None:
            self._last_num_tokens = tokens

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        step = state.global_step
        inject_fault()  # STUDIO_INJECT_OOM's test hook: out of memory once, at the first step
        log_compile_time()
        freeze_long_lived()
        # TRL's DefaultFlowCallback (first in the list) has set should_save for save_steps.
        self._periodic_save = control.should_save
        self.recorder.progress(step)
        self.recorder.phase(RunPhase.TRAINING, step)
        if self.eval_steps and step % self.eval_steps == 0 and step < state.max_steps:
            self._run_eval(kwargs["model"], step, then=RunPhase.TRAINING)
        out_of_time = (
            self.time_budget_s is not None and time.monotonic() - self._started > self.time_budget_s
        )
        if out_of_time:
            logger.info("Time budget reached at step %d", step)
            self.recorder.phase(RunPhase.TIME_BUDGET, step)
            control.should_training_stop = True
            control.should_save = True
        if self.stop.is_set():
            logger.info("Stop requested: saving a checkpoint at step %d", step)
            self.recorder.phase(RunPhase.STOPPING, step)
            control.should_save = True
            control.should_training_stop = True
        elif self._periodic_save and not out_of_time:
            checkpoint_started(self.recorder, step)

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self._periodic_save and not control.should_training_stop:
            checkpoint_saved(self.recorder, state.global_step)
        self._periodic_save = False

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if not self.stop.is_set():
            self.finish(kwargs["model"], state.global_step)

    def finish(self, model: Any, step: int) -> None:
        """The end of training at ``step``: the final held-out evaluation."""
        self._run_eval(model, step)

    def _run_eval(self, model: Any, step: int, then: RunPhase | None = None) -> None:
        """Evaluate at ``step`` (once a step), then record the phase ``then`` (None: the
        caller records what comes next)."""
        if self.evaluate is None or self._last_eval_step == step:
            return
        self._last_eval_step = step
        was_training = model.training
        model.eval()
        try:
            self.recorder.metrics(step, self.evaluate(model, step))
        finally:
            model.train(was_training)
        if then is not None:
            self.recorder.phase(then, step)
