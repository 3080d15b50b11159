"""The ``training`` section of a run config: optimisation, schedule, checkpoints, evaluation, and
the hardware a run trains on (GPUs per machine, machines, how the processes share the model).

A run trains in ``processes`` = ``num_gpus`` x ``num_machines`` processes, one per GPU; every
per-device split (completions per step, micro-batches, the memory estimate) divides by that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.fields import POSITIVE, SEED, ConfigError, check_fields, knob

LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")
REPORT_TO = ("tensorboard", "wandb", "trackio")
DISTRIBUTED = ("ddp", "fsdp")
ROLLOUTS = ("sync", "async")
#: Most machines one run may span (``training.num_machines``).
MAX_MACHINES = 64
#: torch.distributed's customary rendezvous port (``accelerate launch``'s default too).
DEFAULT_MAIN_PORT = 29500
#: A host name or an IPv4/IPv6 address: letters, digits, dots, hyphens and colons.
MAIN_ADDRESS = re.compile(r"[A-Za-z0-9:][A-Za-z0-9.:-]*")  # never a leading "-" (an option)


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
    rollout: str = knob(
        "sync",
        help=(
            "sync: each step samples, scores, then updates. async: the next step's completions "
            "are sampled while this step updates (GRPO and RLOO, one GPU), one update older, "
            "their importance weights truncated (gen/is_ratio_mean)."
        ),
        choices=ROLLOUTS,
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
        help=(
            "GPUs of each machine, one training process each (more than one process in all "
            "starts `accelerate launch`). They share the step's prompts: raise "
            "prompts_per_step with them to keep each GPU as busy as one."
        ),
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
    num_machines: int = knob(
        1,
        help=(
            "Machines the run trains on, num_gpus GPUs each (>1: machine 0 is the one that "
            "starts the run; it prints the command each other machine runs)."
        ),
        lo=1,
        hi=MAX_MACHINES,
    )
    main_address: str = knob(
        "",
        help=(
            "With several machines: the host name or IP address of machine 0, as the others "
            "reach it."
        ),
    )
    main_port: int = knob(
        DEFAULT_MAIN_PORT,
        help="With several machines: the TCP port machine 0 listens on for the others.",
        lo=1024,
        hi=65535,
    )
    report_to: list[str] = knob(  # noqa: RUF009 - knob returns a dataclasses.field
        help=f"Extra trackers TRL logs to besides ours: {', '.join(REPORT_TO)}.",
        choices=REPORT_TO,
        default_factory=list,
    )

    def __post_init__(self) -> None:
        check_fields(self, "training")
        self.gpu_ids = self._normalized_gpu_ids()
        self.main_address = self._checked_main_address()
        if self.distributed == "fsdp" and self.processes < 2:
            raise ConfigError(
                "training.distributed",
                "fsdp shards the model over several GPUs; set num_gpus (or num_machines) so "
                "that the run has 2 or more, or use ddp",
            )

    @property
    def processes(self) -> int:
        """Training processes of the run, one per GPU: ``num_gpus`` on each of ``num_machines``
        (accelerate's ``num_processes``). Every per-device split divides by this."""
        return self.num_gpus * self.num_machines

    def _checked_main_address(self) -> str:
        address = self.main_address.strip()
        # It reaches torchrun's command line and the printed commands: no spaces, quotes or
        # shell characters, only what host names and IPv4/IPv6 addresses are made of.
        if address and (len(address) > 253 or not MAIN_ADDRESS.fullmatch(address)):
            raise ConfigError(
                "training.main_address",
                "must be a host name or IP address (letters, digits, '.', '-' and ':' only, at "
                f"most 253 characters), got {self.main_address!r}",
            )
        if self.num_machines > 1 and not address:
            raise ConfigError(
                "training.main_address",
                f"num_machines {self.num_machines} needs the host name or IP address of machine "
                "0, as the other machines reach it (e.g. 10.0.0.5)",
            )
        return address

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
