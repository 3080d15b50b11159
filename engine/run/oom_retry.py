"""One retry at half the micro-batch for a run that runs out of GPU memory.

The memory estimate (:mod:`engine.planning.memory`) picks the micro-batch from terms measured
on a few models; a model or prompt it did not foresee can still run out of memory (issue 22: a
LoRA run picked 256 and died in the adapters' input casts). Rather than ending such a run, the
worker frees the device and trains it again, once, at the largest micro-batch the batch rule allows
that is at most half the one that ran out (from its latest checkpoint, if any), and says so in
the log and in a ``NoteKind.OUT_OF_MEMORY_RETRY`` note the Runs view shows. Only one-process
runs retry: the processes of a multi-GPU run would have to agree on it.

``STUDIO_INJECT_OOM=1`` makes the first training step of the process raise
``torch.OutOfMemoryError`` once, so the retry is tested on a CPU.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, replace

from engine.config.run_config import RunConfig


@dataclass
class Attempt:
    """What an attempt ran with: the micro-batch per device (once picked)."""

    micro_batch: int | None = None


def is_out_of_memory(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.OutOfMemoryError)


def retry_config(config: RunConfig, ran: int | None) -> RunConfig | None:
    """``config`` at the largest allowed micro-batch at most half of ``ran`` (the one that ran
    out), or None where there is nothing to retry with (one completion already, several GPUs)."""
    from engine.planning.micro_batch import micro_batch_choices

    ran = ran or config.per_device_batch_size()
    if config.training.processes > 1 or ran <= 1:
        return None
    size = next(s for s in micro_batch_choices(config) if s <= ran // 2)
    return replace(config, training=replace(config.training, micro_batch_size=size))


def free_device_memory() -> None:
    """Give the failed attempt's tensors back to the device before the retry allocates."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
