"""A checkpoint file that smuggles code into a pickle is refused on resume, never run (S9).

Runs share a data dir, so a file planted in one checkpoint folder must not execute anything
when its run resumes: every ``.pt``/``.pth`` file is read with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import os
import pickle
import shutil

import pytest

from engine.config.run_config import RunConfig
from engine.run.launcher import Launcher
from engine.run.worker import run as run_worker
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.in_process_run import run_in_process


class _Payload:
    """Unpickling this runs ``os.system`` (what a hostile checkpoint file would do)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.reliability
@pytest.mark.parametrize(
    ("algorithm", "planted"), [("ppo", "rng_state.pt"), ("grpo", "rng_state.pth")]
)
def test_a_poisoned_checkpoint_file_fails_the_resume_without_running_it(
    data_dir, tmp_path, algorithm, planted, record_property
):
    config = RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "training": {"steps": 2, "prompts_per_step": 2, "save_steps": 1, "eval_samples": 0},
            "generation": {"num_generations": 2, "max_completion_length": 16},
        }
    )
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    run_dir = Launcher(data_dir).run_dir(run_id)
    shutil.rmtree(run_dir / "checkpoint-2")  # resume from step 1
    marker = tmp_path / "code-ran"
    with open(run_dir / "checkpoint-1" / planted, "wb") as f:
        pickle.dump(_Payload(str(marker)), f, protocol=2)  # torch.save's protocol

    status = run_worker(config, run_id, data_dir)

    record_property("probes_tried", 1)
    record_property("probes_passed", int(not marker.exists()))
    assert not marker.exists(), "the planted pickle ran code"
    assert status == RunStatus.FAILED
    with Database(db_path(data_dir)) as db:
        error = run_store.get_run(db, run_id).error_message
    assert "weights_only" in error or "Unpickl" in error, error
