"""Training a run for real without a subprocess: the fast path for tests of a few steps."""

from __future__ import annotations

import os
from pathlib import Path

from engine import worker
from engine.config import RunConfig
from engine.launcher import CONFIG_FILE, Launcher
from storage.schema import RunStatus


def run_in_process(data_dir: Path, config: RunConfig) -> tuple[str, RunStatus]:
    """Record ``config`` as a run owned by this process and run its worker here to the end;
    the run's id and final status."""
    launcher = Launcher(data_dir)
    run_id = launcher.record(config, pid=os.getpid())
    return run_id, worker.run(launcher.run_dir(run_id) / CONFIG_FILE, run_id, data_dir)
