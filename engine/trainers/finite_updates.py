"""Skip an optimizer update whose gradients are not finite.

One non-finite gradient turns the weights it reaches into NaN at the optimizer step (clipping by
a NaN or infinite norm multiplies every gradient by NaN or 0 * inf), and the run goes on sampling
from a broken model with a reward of 0 at every later step. Runs in float16 have a loss scaler
that skips such steps (``torch.amp.GradScaler``: "if inf or NaN gradients are found,
``optimizer.step()`` is skipped"); bfloat16 and float32 runs have none. Megatron-LM likewise
skips an iteration whose gradient norm is NaN or infinite. This does the same for every trainer:
the update is dropped (every gradient set to None, so the optimizer leaves each weight and its
moments as they were), the run logs it and counts it (``train/skipped_updates``), and a run
whose gradients stay non-finite for :data:`MAX_IN_A_ROW` updates ends with an error that says
what to change instead of training on nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

import torch
from torch import distributed
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from engine.tracking import metric_names
from engine.tracking.recorder import RunRecorder
from storage.sqlite.schema import NoteKind

logger = logging.getLogger(__name__)

MAX_IN_A_ROW = 5
# A test's fault-injection hook: the steps (comma-separated) whose gradients are made NaN.
FAULT_ENV = "STUDIO_INJECT_NAN_GRADIENTS"


class NonFiniteGradients(RuntimeError):
    """The gradients were NaN or infinite for :data:`MAX_IN_A_ROW` updates in a row."""


def gradients_finite(parameters: Iterable[torch.nn.Parameter]) -> bool:
    """Whether every gradient of ``parameters`` is finite, on every process of the run (under
    FSDP each holds a shard, so the answer is agreed on, and every process skips together)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    local = [g.to_local() if hasattr(g, "to_local") else g for g in grads]  # FSDP's DTensors
    if local:
        finite = torch.isfinite(torch.nn.utils.get_total_norm(local)).to(torch.int32)
    else:
        finite = torch.ones((), dtype=torch.int32)
    if distributed.is_available() and distributed.is_initialized():
        if distributed.get_backend() == "nccl":
            finite = finite.to(torch.device("cuda", torch.cuda.current_device()))
        distributed.all_reduce(finite, op=distributed.ReduceOp.MIN)
    return bool(finite)


def _inject_fault(parameters: list[torch.nn.Parameter], step: int) -> None:
    """Make the gradients NaN at the steps ``STUDIO_INJECT_NAN_GRADIENTS`` lists (a test's hook:
    an overflow cannot be provoked on demand in a tiny model)."""
    steps = os.environ.get(FAULT_ENV, "")
    if str(step) in steps.split(","):
        for p in parameters:
            if p.grad is not None:
                p.grad.fill_(float("nan"))


class UpdateGuard:
    """Drops the gradients of an update that is not finite; counts it in ``recorder``'s
    metrics and notes it for the Runs view."""

    def __init__(self, recorder: RunRecorder | None = None) -> None:
        self.recorder = recorder
        self.skipped = 0
        self.in_a_row = 0

    def allow(self, parameters: Iterable[torch.nn.Parameter], step: int) -> bool:
        """True: apply the update. False: its gradients were NaN or infinite and are dropped."""
        parameters = list(parameters)
        _inject_fault(parameters, step)
        if gradients_finite(parameters):
            self.in_a_row = 0
            return True
        for p in parameters:
            p.grad = None
        self.skipped += 1
        self.in_a_row += 1
        message = (
            f"Step {step}: the gradients were NaN or infinite; the update was skipped "
            f"({self.skipped} skipped in this run)"
        )
        logger.warning(message)
        if self.recorder is not None:
            self.recorder.metrics(step, {metric_names.SKIPPED_UPDATES: float(self.skipped)})
            self.recorder.note(step, NoteKind.SKIPPED_UPDATE, message, {"skipped": self.skipped})
        if self.in_a_row >= MAX_IN_A_ROW:
            raise NonFiniteGradients(
                f"the gradients were NaN or infinite for {self.in_a_row} updates in a row (step "
                f"{step}): lower training.learning_rate, keep training.max_grad_norm above 0, "
                "or load the model in bfloat16 or float32 (model.dtype)"
            )
        return False


class FiniteUpdatesCallback(TrainerCallback):
    """:class:`UpdateGuard` before each optimizer step of a TRL trainer."""

    def __init__(self, guard: UpdateGuard) -> None:
        self.guard = guard

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        # The step being trained: global_step counts the ones done.
        self.guard.allow(kwargs["model"].parameters(), state.global_step + 1)
