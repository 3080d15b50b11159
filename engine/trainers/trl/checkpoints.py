"""Trainer checkpoints (GRPO, RLOO) written aside and published by one rename.

transformers' ``Trainer._save_checkpoint`` writes straight into ``checkpoint-<step>/``, so a
worker killed mid-save leaves a folder that a resume would pick and fail on. Here the Trainer
writes the same files under the run's staging folder
(:func:`engine.runtime.checkpoints.staging_dir`: the trainers' ``_get_output_dir`` answers the
staging folder during the save), and the main process renames the finished folder into place
after committing the step's metrics (``before_publish``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.runtime.checkpoints import publish, rotate_checkpoints
from engine.runtime.layout import staged_checkpoint_dir


@contextmanager
def staged_save(
    trainer: Any, run_dir: Path, before_publish: Callable[[], None] | None
) -> Iterator[str]:
    """Yields the folder the Trainer's save should write into; once the block has written
    every process's part, publishes the checkpoint and rotates the old ones (main process)."""
    staged = staged_checkpoint_dir(run_dir, trainer.state.global_step)
    if trainer.args.should_save:
        shutil.rmtree(staged, ignore_errors=True)  # left by an earlier attempt at this step
    yield str(staged.parent)
    trainer.accelerator.wait_for_everyone()  # every process has written its part
    if trainer.args.should_save:
        publish(staged, before_publish)
        rotate_checkpoints(run_dir, trainer.args.save_total_limit)
    trainer.accelerator.wait_for_everyone()
