"""A periodic checkpoint save is a phase the run view shows, for TRL runs and for our PPO: real
worker subprocesses on the default model with save_steps 1, the phases read back from the rows
the workers recorded."""

from __future__ import annotations

import pytest
from run_waits import wait_for
from test_runs import FINAL, launcher, tiny_config  # noqa: F401

from storage.paths import db_path
from storage.records import logs as log_store
from storage.records import phases as phase_store
from storage.sqlite.db import Database
from storage.sqlite.schema import RunPhase, RunStatus

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
        walked = phase_store.phases(db, run_id)
    log = "\n".join(e.message for e in entries)
    assert "Saving a checkpoint at step 1" in log and "Saving a checkpoint at step 2" in log, log
    # From the worker's start: the model, the first evaluation, then step 1's save, back to
    # training, step 2's save (the last), the final evaluation and the final model.
    assert walked[:2] == [(RunPhase.STARTING, None), (RunPhase.LOADING_MODEL, None)], walked
    saves = [step for phase, step in walked if phase == RunPhase.SAVING_CHECKPOINT]
    assert saves == [1, 2], walked
    first = walked.index((RunPhase.SAVING_CHECKPOINT, 1))
    assert walked[first + 1][0] == RunPhase.TRAINING, walked
    after_last = [phase for phase, _ in walked[walked.index((RunPhase.SAVING_CHECKPOINT, 2)) :]]
    assert after_last[1:] == [RunPhase.EVALUATING, RunPhase.SAVING_FINAL], walked
