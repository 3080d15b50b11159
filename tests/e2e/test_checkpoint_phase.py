"""A periodic checkpoint save is a phase the run view shows, for TRL runs and for our PPO: real
worker subprocesses on the default model with save_steps 1, the phases read back from the log
lines the workers stored."""

from __future__ import annotations

import pytest
from run_waits import wait_for
from test_runs import FINAL, launcher, tiny_config  # noqa: F401

from storage import logs as log_store
from storage.db import Database
from storage.paths import db_path
from storage.schema import RunStatus
from ui.runs import progress as run_progress

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_a_periodic_checkpoint_save_is_shown_then_training_goes_on(
    launcher,  # noqa: F811
    data_dir,
    algorithm,
):
    run_id = launcher.start(tiny_config(algorithm, steps=2, save_steps=1, eval_samples=4))
    run = wait_for(data_dir, run_id, lambda r: r.status in FINAL)
    assert run.status == RunStatus.COMPLETED, run.error_traceback
    with Database(db_path(data_dir)) as db:
        entries, _ = log_store.logs_since(db, run_id, 0, limit=10_000)
    log = "\n".join(e.message for e in entries)
    assert "Saving a checkpoint at step 1" in log and "Saving a checkpoint at step 2" in log, log
    walked = run_progress.phases_walked(run, [f"- {e.level} {e.message}" for e in entries])
    saving = run_progress.SAVING
    # Step 1's save, back to training, step 2's save (the last), then the final evaluation.
    assert walked.count(saving) == 2, walked
    first = walked.index(saving)
    assert walked[first + 1] == run_progress.TRAINING, walked
    assert walked[walked.index(saving, first + 1) + 1] == "Evaluating on held-out prompts", walked
