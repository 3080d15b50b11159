"""The worker's look at the disk before the first step: what the run will still write against
what the data dir has free (:mod:`engine.planning.disk`); a queued run may start hours after
it was checked, on a disk that filled meanwhile."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from engine.config.run_config import RunConfig
from engine.planning.disk import check_disk
from engine.runtime.checkpoints import checkpoint_step
from engine.tracking.recorder import RunRecorder
from storage.sqlite.schema import NoteKind

logger = logging.getLogger(__name__)


def plan_writes(
    config: RunConfig, data_dir: Path, resume_from: Path | None, recorder: RunRecorder
) -> None:
    """Check, before the first step, that what the run will still write fits the free disk
    (the run may have waited in the queue while the disk filled): ``ConfigError`` when it does
    not, a ``DISK_SPACE_LOW`` note when it leaves less than a fifth of the free space."""
    if int(os.environ.get("RANK", "0")) != 0:  # the main process writes storage
        return
    done = 0 if resume_from is None else checkpoint_step(resume_from) or 0
    plan = check_disk(config, data_dir, from_step=done)
    if plan is None:
        return
    logger.info("Disk: %s", plan.describe())
    if plan.tight:
        detail = {"needed_bytes": plan.total_bytes, "free_bytes": plan.free_bytes}
        recorder.note(done, NoteKind.DISK_SPACE_LOW, plan.describe(), detail)
