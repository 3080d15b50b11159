"""What a run writes to disk, planned before its first step against the data dir's free space.

Nothing is loaded: the model's shape comes from its config on the meta device
(:func:`engine.models.shape.model_shape`). The terms follow what the savers write:

- **a checkpoint**: the trained weights and AdamW's two moments for each of them, in the
  parameter's dtype (``torch.optim.AdamW``'s ``exp_avg`` and ``exp_avg_sq``, saved by the
  Trainer's ``optimizer.pt`` and our PPO's): a full fine-tune's weights at the dtype's bytes
  (bf16 on a GPU, fp32 on CPU) and 2 moments of the same, 3 copies in all; a LoRA run's adapter
  in fp32 (peft's ``autocast_adapter_dtype``) with its 2 fp32 moments. PPO's separate critic
  (``ppo.value_model: separate``) adds a second full model and its moments;
- **checkpoints on disk at once**: ``ceil(steps / save_steps)`` are written (the Trainer also
  saves at the last step); the newest is written before the oldest beyond
  ``save_total_limit`` is deleted, so ``save_total_limit + 1`` are on disk at the peak;
- **the final model**: the adapter alone for a LoRA run (:mod:`engine.models.adapters`), the
  weights for a full fine-tune;
- **records**: samples (``samples_per_log`` per logged step, prompt and completion text at
  about 4 bytes a token each, plus ~1 KB of trace) and metrics (~100 metrics of ~100 bytes a
  logged step) in the database.

Each saved folder adds :data:`FOLDER_OVERHEAD` for its tokenizer, config and trainer state.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from engine.config.run_config import RunConfig
from engine.fields import ConfigError

#: Tokenizer files, configs, trainer state and RNG state of one saved folder.
FOLDER_OVERHEAD = 20 * 2**20
#: A stored sample's trace and columns beyond its text.
SAMPLE_OVERHEAD = 1024
BYTES_PER_TOKEN_TEXT = 4
#: Prompt tokens a stored sample is assumed to carry (its prompt is stored beside it).
PROMPT_TOKENS = 512
METRIC_BYTES_PER_STEP = 100 * 100
#: A plan above this share of the free space is carried out, with a warning.
TIGHT_SHARE = 0.8
GB = 1e9


@dataclass(frozen=True)
class DiskPlan:
    """Bytes a run will write, and what its data dir has free.

    Attributes:
        checkpoint_bytes: one checkpoint (weights or adapter, optimizer state, the rest).
        checkpoints: how many are on disk at once at the peak.
        final_bytes: the final model.
        records_bytes: samples and metrics in the database.
        free_bytes: free space of the data dir's file system now.
        where: the folder whose file system was measured.
    """

    checkpoint_bytes: int
    checkpoints: int
    final_bytes: int
    records_bytes: int
    free_bytes: int
    where: str

    @property
    def total_bytes(self) -> int:
        return self.checkpoint_bytes * self.checkpoints + self.final_bytes + self.records_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.free_bytes

    @property
    def tight(self) -> bool:
        """It fits, but leaves less than a fifth of the free space."""
        return self.total_bytes > TIGHT_SHARE * self.free_bytes

    def describe(self) -> str:
        return (
            f"the run will write about {size_text(self.total_bytes)} ({self.checkpoints} "
            f"checkpoint(s) of {size_text(self.checkpoint_bytes)} with optimizer state, the "
            f"final model {size_text(self.final_bytes)}, samples and metrics "
            f"{size_text(self.records_bytes)}); {self.where} has {size_text(self.free_bytes)} "
            "free"
        )


def size_text(n: int) -> str:
    """``n`` bytes for people: GB to one decimal from 0.1 GB, else MB (an adapter's size)."""
    return f"{n / GB:.1f} GB" if n >= GB / 10 else f"{n / 1e6:.1f} MB"


def free_bytes(folder: Path) -> tuple[int, Path]:
    """Free bytes of the file system ``folder`` is (or will be) on, and the folder measured:
    the nearest one that exists."""
    folder = Path(folder).expanduser().absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free, folder


def checkpoints_at_peak(steps: int, save_steps: int, keep: int) -> int:
    """Checkpoints on disk at once: the newest is published before the oldest is deleted."""
    if not save_steps:
        return 0
    return min(math.ceil(steps / save_steps), keep + 1)


def plan_disk(config: RunConfig, data_dir: Path, from_step: int = 0) -> DiskPlan | None:
    """The disk plan of ``config`` from step ``from_step`` (a resume writes the rest), or None
    when the model's config cannot be read from here."""
    from engine.models.loading import pick_device, pick_dtype
    from engine.models.shape import model_shape

    shape = model_shape(config.model)
    if shape is None:
        return None
    spec, t = config.model, config.training
    weight_bytes = pick_dtype(spec.dtype, pick_device()).itemsize
    if spec.lora is not None:
        trained = shape.lora_parameters * 4  # peft keeps adapters in fp32
        final = trained
    else:
        trained = shape.parameters * weight_bytes
        final = trained
    checkpoint = 3 * trained  # the weights and AdamW's two moments
    if config.algorithm == "ppo" and config.ppo.value_model == "separate":
        checkpoint += 3 * shape.parameters * weight_bytes
    steps = max(t.steps - from_step, 0)
    logged = steps // t.logging_steps
    text = (config.generation.max_completion_length + PROMPT_TOKENS) * BYTES_PER_TOKEN_TEXT
    records = logged * (t.samples_per_log * (text + SAMPLE_OVERHEAD) + METRIC_BYTES_PER_STEP)
    free, where = free_bytes(data_dir)
    return DiskPlan(
        checkpoint_bytes=checkpoint + FOLDER_OVERHEAD,
        checkpoints=checkpoints_at_peak(steps, t.save_steps, t.save_total_limit),
        final_bytes=final + FOLDER_OVERHEAD,
        records_bytes=records,
        free_bytes=free,
        where=str(where),
    )


def check_disk(config: RunConfig, data_dir: Path, from_step: int = 0) -> DiskPlan | None:
    """The plan (None when it cannot be made); ``ConfigError`` naming
    ``training.save_total_limit`` (and the other fields to change) when it does not fit."""
    plan = plan_disk(config, data_dir, from_step)
    if plan is None or plan.fits:
        return plan
    t = config.training
    raise ConfigError(
        "training.save_total_limit",
        f"not enough disk space: {plan.describe()}. Keep fewer checkpoints "
        f"(training.save_total_limit, now {t.save_total_limit}), save less often "
        f"(training.save_steps, now {t.save_steps}; 0: no checkpoints), store fewer samples "
        f"(training.samples_per_log, now {t.samples_per_log}), train with LoRA (model.lora), "
        "or free space or use a data dir on a larger disk (--data-dir, STUDIO_DATA_DIR)",
    )
