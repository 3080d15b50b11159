"""The last write of a run that trained to the end: its final model, and what is kept when the
disk refuses it.

Training is done by the time the final model is written, and the newest checkpoint already
holds what it trained (the LoRA adapter or the full weights, with the optimizer state). A final
save that fails for lack of space (``ENOSPC``, a quota) therefore does not fail the run: the
half-written ``final/`` is removed, the run is ``completed``, and a
``NoteKind.FINAL_SAVE_FAILED`` note says what happened, the bytes needed and free, and which
checkpoint was kept (its ``detail``: ``error``, ``needed_bytes``, ``free_bytes``, ``kept``).
The Playground, ``generate`` and the exports then read that checkpoint
(:func:`engine.run.saved_models.run_models`). With no checkpoint to keep, nothing trained
survives and the run fails with the same message.

``STUDIO_INJECT_FULL_DISK=final`` makes the final save raise ``ENOSPC`` (a test's fault hook,
read in the worker process).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from engine.models.adapters import is_peft_model
from engine.models.specs import ModelSpec
from engine.planning.disk import size_text
from engine.runtime.checkpoints import latest_checkpoint
from engine.runtime.layout import final_model_dir
from engine.tracking.recorder import RunRecorder
from storage.sqlite.schema import NoteKind

logger = logging.getLogger(__name__)

FAULT_ENV = "STUDIO_INJECT_FULL_DISK"
#: errno values that mean "the disk (or the user's quota on it) is full".
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class FinalSaveError(OSError):
    """The final model could not be written and no checkpoint holds what the run trained."""


@dataclass(frozen=True)
class FinalSaveFailure:
    """Why the final save failed and what the run kept instead.

    Attributes:
        error: the system's words for it ("no space left on device").
        needed_bytes: what the final model takes on disk.
        free_bytes: what was free in the run folder's file system after the failure.
        kept: the checkpoint folder kept (``checkpoint-<step>``), or None.
    """

    error: str
    needed_bytes: int
    free_bytes: int
    kept: str | None

    def message(self) -> str:
        kept = f"{self.kept} kept" if self.kept else "no checkpoint to keep"
        return (
            f"final save failed: {self.error}, {size_text(self.needed_bytes)} needed, "
            f"{size_text(self.free_bytes)} free; {kept}"
        )


def inject_full_disk() -> None:
    """Raise ``ENOSPC`` where ``STUDIO_INJECT_FULL_DISK=final`` (a test's fault hook)."""
    if os.environ.get(FAULT_ENV) == "final":
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (injected by {FAULT_ENV})")


def is_disk_full(exc: BaseException) -> bool:
    """True for a write refused for lack of space; safetensors raises its own
    ``SafetensorError`` with the OS's message ("No space left on device") rather than OSError."""
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        return True
    text = str(exc).lower()
    return "no space left on device" in text or "disk quota exceeded" in text


def final_model_bytes(model: Any) -> int:
    """What the final save of ``model`` writes: the adapter of a ``PeftModel`` (its trainable
    weights), else every weight once (tied ones are stored once)."""
    seen: set[int] = set()
    total = 0
    lora = is_peft_model(model)
    for param in model.parameters():
        if (lora and not param.requires_grad) or param.data_ptr() in seen:
            continue
        seen.add(param.data_ptr())
        total += param.numel() * param.element_size()
    return total


def _free_bytes(folder: Path) -> int:
    return shutil.disk_usage(folder if folder.exists() else folder.parent).free


def save_or_keep(
    save: Callable[[], None],
    run_folder: Path,
    needed_bytes: int,
    recorder: RunRecorder,
    step: int,
) -> FinalSaveFailure | None:
    """Run ``save`` (the final save); on a full disk, keep the newest checkpoint and note it.

    Returns None when the final model was written, else what was kept (also in a note).
    Raises :class:`FinalSaveError` when the disk is full and there is no checkpoint to keep, and
    any other error of ``save`` as it is.
    """
    try:
        inject_full_disk()
        save()
        return None
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        cause = exc
    shutil.rmtree(final_model_dir(run_folder), ignore_errors=True)  # half-written, unreadable
    kept = latest_checkpoint(run_folder)
    reason = os.strerror(errno.ENOSPC).lower() if isinstance(cause, OSError) else str(cause)
    if isinstance(cause, OSError) and cause.errno == errno.EDQUOT:
        reason = os.strerror(errno.EDQUOT).lower()
    failure = FinalSaveFailure(
        error=reason,
        needed_bytes=needed_bytes,
        free_bytes=_free_bytes(run_folder),
        kept=kept.name if kept is not None else None,
    )
    if kept is None:
        raise FinalSaveError(errno.ENOSPC, failure.message()) from cause
    logger.error("%s", failure.message())
    recorder.note(step, NoteKind.FINAL_SAVE_FAILED, failure.message(), asdict(failure))
    return failure


def save_final(
    accelerator: Any,
    model: Any,
    tokenizer: Any,
    run_folder: Path,
    base: ModelSpec,
    recorder: RunRecorder,
    step: int,
) -> FinalSaveFailure | None:
    """Write the run's final model (:func:`engine.run.distributed.save_final_model`; every
    process calls this), keeping the newest checkpoint when the disk is full
    (:func:`save_or_keep`)."""
    from engine.run.distributed import save_final_model

    out = final_model_dir(run_folder)
    size = final_model_bytes(accelerator.unwrap_model(model))
    save = partial(save_final_model, accelerator, model, tokenizer, out, base)
    return save_or_keep(save, run_folder, size, recorder, step)
