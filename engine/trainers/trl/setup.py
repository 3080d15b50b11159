"""What our GRPO and RLOO trainers add once TRL's constructor has built them."""

from __future__ import annotations

from typing import Any

from engine.generation.runner import GenerationRunner
from engine.trainers.compiled_layers import (
    COMPILED_LENGTH_MULTIPLE,
    compile_decoder_layers,
    compiles_on,
)
from engine.trainers.finite_updates import FiniteUpdatesCallback
from engine.trainers.masked_rows import repair_empty_rows
from engine.trainers.trl.extras import StudioExtras
from engine.trainers.trl.sampling import attach_runner
from engine.trainers.weight_schedule import WeightScheduleCallback


def finish_setup(trainer: Any, extras: StudioExtras) -> GenerationRunner | None:
    """Guards the updates, schedules the reward weights, compiles the decoder layers where it
    pays and attaches our sampler; returns the sampler (None where TRL samples)."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    extras.update_guard.watch_head(model)
    trainer.add_callback(FiniteUpdatesCallback(extras.update_guard))
    if extras.schedule is not None:
        trainer.add_callback(
            WeightScheduleCallback(extras.schedule, trainer.reward_weights, extras.record_metrics)
        )
    repair_empty_rows(model)
    sharded = trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled
    if compiles_on(trainer.accelerator.device, sharded):
        compile_decoder_layers(model)
        trainer.pad_to_multiple_of = COMPILED_LENGTH_MULTIPLE  # masked tokens: one graph
    return attach_runner(trainer, extras.backend, extras.prompt_width)
