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

The skip's message names where the gradients went bad: the backward pass runs from the loss
down, and a NaN or infinity spreads from where it arose to everything below it, so of the
tensors that are not finite the one nearest the loss (last in the model's parameter order) marks
where it began; when every tensor is not finite it began at the loss or above the last trained
layer (a frozen LM head, the final norm).
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


def _local(grad: torch.Tensor) -> torch.Tensor:
    """This process's part of a gradient (FSDP's DTensors hold a shard)."""
    return grad.to_local() if hasattr(grad, "to_local") else grad


def gradients_finite(parameters: Iterable[torch.nn.Parameter]) -> bool:
    """Whether every gradient of ``parameters`` is finite, on every process of the run (under
    FSDP each holds a shard, so the answer is agreed on, and every process skips together)."""
    local = [_local(p.grad) for p in parameters if p.grad is not None]
    if local:
        finite = torch.isfinite(torch.nn.utils.get_total_norm(local)).to(torch.int32)
    else:
        finite = torch.ones((), dtype=torch.int32)
    if distributed.is_available() and distributed.is_initialized():
        if distributed.get_backend() == "nccl":
            finite = finite.to(torch.device("cuda", torch.cuda.current_device()))
        distributed.all_reduce(finite, op=distributed.ReduceOp.MIN)
    return bool(finite)


def non_finite_gradients(named: list[tuple[str, torch.nn.Parameter]]) -> list[str]:
    """The names of the parameters whose gradient (this process's part) is not finite."""
    with_grad = [(name, _local(p.grad)) for name, p in named if p.grad is not None]
    if not with_grad:
        return []
    # one flag per tensor, read back at once: a host sync per tensor made a skipped step slow
    device = with_grad[0][1].device  # a model split over devices: gathered on the first one
    finite = torch.stack([torch.isfinite(g).all().to(device) for _, g in with_grad]).tolist()
    return [name for (name, _), ok in zip(with_grad, finite, strict=True) if not ok]


def where_non_finite(named: list[tuple[str, torch.nn.Parameter]]) -> str:
    """Where the non-finite gradients are, in words, for the skip's message."""
    with_grad = sum(p.grad is not None for _, p in named)
    bad = non_finite_gradients(named)
    if not bad:
        return "on another process"
    if len(bad) == with_grad:
        return (
            f"in all {with_grad} gradient tensors: from the last trained layer or nearer the loss"
        )
    return f"in {len(bad)} of {with_grad} gradient tensors, nearest the loss: {bad[-1]}"


def _inject_fault(parameters: list[torch.nn.Parameter], step: int) -> None:
    """Make the gradients NaN at the steps ``STUDIO_INJECT_NAN_GRADIENTS`` lists (a test's hook:
    an overflow cannot be provoked on demand in a tiny model)."""
    steps = os.environ.get(FAULT_ENV, "")
    if str(step) in steps.split(","):
        for p in parameters:
            if p.grad is not None:
                p.grad.fill_(float("nan"))


class FiniteWatch:
    """Whether every tensor handed to :meth:`add` since the last read was finite, kept on the
    device and read only when an update is skipped (no host sync per micro-batch)."""

    def __init__(self) -> None:
        self.bad: torch.Tensor | None = None

    def add(self, tensor: torch.Tensor) -> None:
        bad = ~torch.isfinite(tensor.detach()).all()
        self.bad = bad if self.bad is None else self.bad | bad

    def reset(self) -> None:
        """Start the next update's watch."""
        self.bad = None

    def read(self) -> bool | None:
        """True: all finite; False: one was not; None: nothing was added. Starts the next
        update's watch."""
        bad, self.bad = self.bad, None
        return None if bad is None else not bool(bad)


def final_norm(model: torch.nn.Module) -> torch.nn.Module | None:
    """The norm between the last decoder layer and the LM head (``model.norm`` in the Llama
    layout, under any wrapper), or None."""
    norms = [
        module
        for name, module in model.named_modules()
        if name.endswith("norm") and "layers" not in name.split(".")
    ]
    return norms[-1] if norms else None


def _origin(loss_finite: bool | None, head_finite: bool | None) -> str:
    """Where the non-finite values began, from the two watches, for the skip's message."""
    if loss_finite is None:
        return ""
    if not loss_finite:
        return "; the loss was not finite"
    if head_finite is None:
        return "; the loss was finite, so the backward pass made them"
    if not head_finite:
        return (
            "; the loss was finite, the gradient the LM head sent into the model was not: the "
            "loss's or the head's backward made them"
        )
    return (
        "; the loss and the gradient the LM head sent into the model were finite: the decoder "
        "layers' backward made them"
    )


class UpdateGuard:
    """Drops the gradients of an update that is not finite; counts it in ``recorder``'s
    metrics and notes it for the Runs view. The trainers hand each micro-batch's loss to
    :attr:`losses` and call :meth:`watch_head`, so the skip can say whether the loss, the
    head's backward or the layers' backward went bad."""

    def __init__(self, recorder: RunRecorder | None = None) -> None:
        self.recorder = recorder
        self.losses = FiniteWatch()
        self.head_gradients = FiniteWatch()
        self.skipped = 0
        self.in_a_row = 0

    def watch_head(self, model: torch.nn.Module) -> None:
        """Also watch the gradient the LM head sends back into ``model`` (at its final norm's
        output), so a skip can tell the head's backward from the layers'."""
        norm = final_norm(model)
        if norm is None:
            return

        def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
            if isinstance(output, torch.Tensor) and output.requires_grad:
                output.register_hook(self.head_gradients.add)

        norm.register_forward_hook(hook)

    def allow(self, model: torch.nn.Module, step: int) -> bool:
        """True: apply the update. False: its gradients were NaN or infinite and are dropped."""
        named = list(model.named_parameters())
        parameters = [p for _, p in named]
        _inject_fault(parameters, step)
        if gradients_finite(parameters):
            self.in_a_row = 0
            self.losses.reset()
            self.head_gradients.reset()
            return True
        where = where_non_finite(named) + _origin(self.losses.read(), self.head_gradients.read())
        for p in parameters:
            p.grad = None
        self.skipped += 1
        self.in_a_row += 1
        message = (
            f"Step {step}: the gradients were NaN or infinite ({where}); the update was "
            f"skipped ({self.skipped} skipped in this run)"
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
        self.guard.allow(kwargs["model"], state.global_step + 1)
