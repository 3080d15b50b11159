"""Crash-proof checkpoint folders: written aside, published by one rename, resumed when complete.

A checkpoint is written into ``run_dir/.saving/checkpoint-<step>/`` and renamed to
``run_dir/checkpoint-<step>/`` once every file is on disk, so a worker killed mid-save never
leaves a ``checkpoint-<step>/`` that a resume would pick and fail on. A folder counts as complete
when it holds ``trainer_state.json``, the file both the Trainer (GRPO, RLOO) and our PPO write
last; that also judges folders written before the rename existed. Before its rename the run's
metrics up to that step are committed to the database (the caller's ``before_publish``), so a
resume from the checkpoint never continues past rows that were lost.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.runtime.layout import CHECKPOINT_PREFIX, COMPLETE_MARKER, final_model_dir, staging_dir
from engine.runtime.layout import STAGING_DIR as STAGING_DIR  # the tests' import path

logger = logging.getLogger(__name__)


def checkpoint_step(path: Path) -> int | None:
    """The step of a ``checkpoint-<step>`` folder name, or ``None`` for any other name."""
    suffix = path.name.removeprefix(CHECKPOINT_PREFIX)
    if path.name == suffix or not suffix.isdigit():
        return None
    return int(suffix)


def is_complete(path: Path) -> bool:
    """True when the checkpoint folder was written to the end (its marker file exists)."""
    return (path / COMPLETE_MARKER).is_file()


def checkpoints(run_dir: Path) -> dict[Path, int]:
    """Every ``checkpoint-<step>`` folder of a run (complete or not) with its step."""
    found = {path: checkpoint_step(path) for path in run_dir.glob(f"{CHECKPOINT_PREFIX}*")}
    return {path: step for path, step in found.items() if step is not None and path.is_dir()}


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run; half-written folders are skipped."""
    complete = {path: step for path, step in checkpoints(run_dir).items() if is_complete(path)}
    return max(complete, key=complete.__getitem__, default=None)


def latest_model_dir(run_dir: Path) -> Path | None:
    """The run's final model if it completed, else its newest checkpoint, if any."""
    final = final_model_dir(run_dir)
    return final if final.is_dir() else latest_checkpoint(run_dir)


def clean_incomplete(run_dir: Path) -> list[Path]:
    """Delete what a killed save left behind: the staging folder and incomplete checkpoints.

    Called before a run (re)starts, so a later save of the same step can be published.
    Returns the deleted folders.
    """
    removed = [p for p in checkpoints(run_dir) if not is_complete(p)]
    if staging_dir(run_dir).exists():
        removed.append(staging_dir(run_dir))
    for path in removed:
        logger.warning("Removing the unfinished checkpoint folder %s", path)
        shutil.rmtree(path, ignore_errors=True)
    return removed


def publish(staged: Path, before_publish: Callable[[], None] | None = None) -> Path:
    """Make the fully written ``staged`` folder visible as ``run_dir/checkpoint-<step>``.

    Its files are flushed to disk first (a rename can otherwise reach the disk before the data
    it names); ``before_publish`` runs right before the rename (the worker commits the step's
    metrics there). An existing folder of the same name (from an attempt that was rewound) is
    replaced. Returns the published path.
    """
    target = staged.parent.parent / staged.name
    for file in staged.rglob("*"):
        if file.is_file():
            _fsync(file)
    if before_publish is not None:
        before_publish()
    if target.exists():
        shutil.rmtree(target)
    os.rename(staged, target)
    _fsync(target.parent)
    with contextlib.suppress(OSError):  # only when empty: another save may be under way
        staged.parent.rmdir()
    return target


def rotate_checkpoints(run_dir: Path, keep: int | None) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints of a run (``None``/0: keep all); returns
    the deleted folders."""
    if not keep or keep <= 0:
        return []
    numbered = checkpoints(run_dir)
    old = sorted(numbered, key=numbered.__getitem__)[:-keep]
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    return old


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_trained_weights(model: Any, folder: Path) -> None:
    """Put the trained weights of checkpoint ``folder`` into ``model``: a LoRA run's adapter
    (peft's ``set_peft_model_state_dict``) or a full model's ``model.safetensors``.

    Only weights that the file leaves out because they are tied to one it holds (an LM head
    tied to the embedding) may be missing; anything else is an error naming the keys.
    """
    from safetensors.torch import load_file

    adapter = folder / "adapter_model.safetensors"
    if adapter.is_file():
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(model, load_file(adapter))
        if result.unexpected_keys:
            raise ValueError(f"{adapter}: keys the model cannot take: {result.unexpected_keys}")
        return
    weights = load_file(folder / "model.safetensors")
    missing, unexpected = model.load_state_dict(weights, strict=False)
    stored = {t.data_ptr() for name, t in model.state_dict().items() if name in weights}
    untied = [name for name in missing if model.state_dict()[name].data_ptr() not in stored]
    if unexpected or untied:
        raise ValueError(f"{folder}: missing {untied}, unexpected {list(unexpected)}")
