"""The ``training`` section of a run config: optimisation, schedule, checkpoints, evaluation, and
the hardware a run trains on (GPUs per machine, machines, how the processes share the model).

A run trains in ``processes`` = ``num_gpus`` x ``num_machines`` processes, one per GPU; every
per-device split (completions per step, micro-batches, the memory estimate) divides by that.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config.fields import POSITIVE, SEED, ConfigError, check_fields, knob

LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")
REPORT_TO = ("tensorboard", "wandb", "trackio")
DISTRIBUTED = ("ddp", "fsdp")


@dataclass
class TrainingSettings:
    """Optimisation, schedule, checkpoints, evaluation and hardware."""

    steps: int = knob(100, help="Optimizer steps to train.", lo=1, hi=1_000_000)
    time_budget_minutes: float | None = knob(
        None,
        help="End training (as completed) after this many minutes; empty = no limit.",
        **POSITIVE,
    )
    prompts_per_step: int = knob(
        8,
        help="Distinct prompts per optimizer step (each sampled in a group).",
        lo=1,
        hi=4096,
    )
    micro_batch_size: int | None = knob(
        None,
        help=(
            "Completions per forward/backward pass on each device; empty = the whole step at once. "
            "Lower it when memory runs out."
        ),
        lo=1,
        hi=65536,
    )
    activation_checkpointing: bool = knob(
        False,
        help=(
            "Recompute each layer's activations in the backward pass instead of keeping them: "
            "much less memory for big models, about a third more compute."
        ),
    )
    learning_rate: float = knob(5e-5, help="AdamW learning rate.", lo=0, hi=1, lo_open=True)
    lr_scheduler: str = knob(
        "constant", help=f"Schedule: {', '.join(LR_SCHEDULERS)}.", choices=LR_SCHEDULERS
    )
    warmup_steps: int = knob(0, help="Linear warm-up steps.", lo=0, hi=1_000_000)
    max_grad_norm: float = knob(1.0, help="Gradient-norm clipping.", **POSITIVE)
    seed: int = knob(0, help="Seed for sampling, data order and init.", **SEED)
    logging_steps: int = knob(
        1, help="Write metrics and samples every N steps.", lo=1, hi=1_000_000
    )
    save_steps: int = knob(
        50, help="Checkpoint every N steps (0 = only at the end).", lo=0, hi=1_000_000
    )
    save_total_limit: int = knob(2, help="Checkpoints kept on disk.", lo=1, hi=1000)
    eval_steps: int = knob(
        25,
        help="Held-out evaluation every N steps (0 = before and after only).",
        lo=0,
        hi=1_000_000,
    )
    eval_samples: int = knob(
        100, help="Held-out prompts per evaluation (0 = no evaluation).", lo=0, hi=100_000
    )
    samples_per_log: int = knob(
        32, help="Completions with their traces stored per logging step.", lo=0, hi=4096
    )
    num_gpus: int = knob(
        1,
        help="Processes for data-parallel training (>1 starts `accelerate launch`).",
        lo=1,
        hi=64,
    )
    gpu_ids: str = knob(
        "",
        help=(
            "GPUs this run uses, as nvidia-smi numbers them (e.g. 0 or 0,2; as many as num_gpus); "
            "empty = the free ones with the most free memory."
        ),
    )
    distributed: str = knob(
        "ddp",
        help=(
            "With several GPUs: ddp (a full copy of the model per GPU) or fsdp (weights, "
            "gradients and optimizer sharded over the GPUs, for full fine-tunes that do not fit "
            "one card)."
        ),
        choices=DISTRIBUTED,
    )
    report_to: list[str] = knob(  # noqa: RUF009 - knob returns a dataclasses.field
        help=f"Extra trackers TRL logs to besides ours: {', '.join(REPORT_TO)}.",
        choices=REPORT_TO,
        default_factory=list,
    )

    def __post_init__(self) -> None:
        check_fields(self, "training")
        self.gpu_ids = self._normalized_gpu_ids()
        if self.distributed == "fsdp" and self.num_gpus < 2:
            raise ConfigError(
                "training.distributed",
                "fsdp shards the model over several GPUs; set num_gpus to 2 or more, or use ddp",
            )

    def _normalized_gpu_ids(self) -> str:
        if not isinstance(self.gpu_ids, str):
            raise ConfigError("training.gpu_ids", f"must be text like 0,1, got {self.gpu_ids!r}")
        parts = [p.strip() for p in self.gpu_ids.split(",") if p.strip()]
        if not parts:
            return ""
        if not all(p.isdigit() and int(p) < 1024 for p in parts):
            raise ConfigError(
                "training.gpu_ids",
                f"must be GPU numbers separated by commas (e.g. 0,1), got {self.gpu_ids!r}",
            )
        ids = [int(p) for p in parts]
        if len(set(ids)) != len(ids):
            raise ConfigError("training.gpu_ids", f"lists a GPU twice: {self.gpu_ids!r}")
        if len(ids) != self.num_gpus:
            raise ConfigError(
                "training.gpu_ids",
                f"names {len(ids)} GPUs for num_gpus {self.num_gpus}; name exactly {self.num_gpus}"
                " or leave it empty",
            )
        return ",".join(map(str, ids))

    @property
    def gpu_list(self) -> list[int]:
        """``gpu_ids`` as numbers ([] = pick free GPUs)."""
        return [int(p) for p in self.gpu_ids.split(",") if p]
