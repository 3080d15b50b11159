"""Training a run for real without a subprocess: the fast path for tests of a few steps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.models.char_tokenizer import build_char_tokenizer
from engine.run import worker
from engine.run.launcher import Launcher
from storage.sqlite.schema import RunStatus
from tests.tiny_models import save_tiny_llama


def run_in_process(data_dir: Path, config: RunConfig) -> tuple[str, RunStatus]:
    """Record ``config`` as a run owned by this process and run its worker here to the end;
    the run's id and final status."""
    launcher = Launcher(data_dir)
    run_id = launcher.record(config, pid=os.getpid())
    return run_id, worker.run(config, run_id, data_dir)


def train_tiny_llama(
    root: Path, name: str, model: dict[str, Any] | None = None, **training: Any
) -> tuple[Path, str]:
    """A tiny Llama (character tokenizer) saved in ``root/tiny`` and trained 2 steps with a
    checkpoint every step, its run recorded in ``root/data``; ``model`` and ``training`` add to
    or override those sections. The data dir and the completed run's id."""
    model_dir = save_tiny_llama(root / "tiny", build_char_tokenizer())
    data_dir = root / "data"
    config = RunConfig.from_dict(
        {
            "name": name,
            "model": {"name_or_path": str(model_dir), **(model or {})},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {
                "steps": 2,
                "prompts_per_step": 2,
                "save_steps": 1,
                "samples_per_log": 4,
                **training,
            },
        }
    )
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    return data_dir, run_id
