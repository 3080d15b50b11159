"""Trainer checkpoints (GRPO, RLOO) written aside and published by one rename.

transformers' ``Trainer._save_checkpoint`` writes straight into ``checkpoint-<step>/``, so a
worker killed mid-save leaves a folder that a resume would pick and fail on. Here the Trainer
writes the same files under the run's staging folder (:func:`engine.run.checkpoints.staging_dir`,
by pointing its output folder there for the save), and the main process renames the finished
folder into place after committing the step's metrics (``before_publish``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.run.checkpoints import publish, rotate_checkpoints
from engine.run.layout import staged_checkpoint_dir


class StagedCheckpointMixin:
    """Mixed in before a transformers Trainer subclass; set ``before_publish`` to a callable
    that commits what must be stored before a checkpoint becomes visible."""

    before_publish: Callable[[], None] | None = None
    _saving_into: str | None = None

    def _get_output_dir(self, trial: Any) -> str:
        if self._saving_into is not None:
            return self._saving_into
        return super()._get_output_dir(trial)

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        run_dir = Path(self._get_output_dir(trial))
        staged = staged_checkpoint_dir(run_dir, self.state.global_step)
        if self.args.should_save:
            shutil.rmtree(staged, ignore_errors=True)  # left by an earlier attempt at this step
        self._saving_into = str(staged.parent)
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self._saving_into = None
        self.accelerator.wait_for_everyone()  # every process has written its part
        if self.args.should_save:
            publish(staged, self.before_publish)
            rotate_checkpoints(run_dir, self.args.save_total_limit)
        self.accelerator.wait_for_everyone()
