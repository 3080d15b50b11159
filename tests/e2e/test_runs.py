"""Real worker subprocesses on the shipped default model: train, stop, kill, resume."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from run_waits import wait_for

from engine.config.run_config import RunConfig
from engine.run.launcher import Launcher
from engine.run.saved_models import recorded_config
from engine.runtime.checkpoints import latest_checkpoint
from storage import runs as run_store
from storage.paths import db_path
from storage.records import samples as sample_store
from storage.records.metrics import metric_names, metrics_since
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

pytestmark = pytest.mark.slow

FINAL = (RunStatus.COMPLETED, RunStatus.STOPPED, RunStatus.FAILED, RunStatus.INTERRUPTED)


def tiny_config(algorithm: str, steps: int = 3, **training) -> RunConfig:
    return RunConfig.from_dict(
        {
            "name": f"tiny {algorithm}",
            "algorithm": algorithm,
            "generation": {"num_generations": 4, "max_completion_length": 48},
            "training": {
                "steps": steps,
                "prompts_per_step": 2,
                "learning_rate": 1e-4,
                "eval_steps": 0,
                "eval_samples": 8,
                "save_steps": 1,
                **training,
            },
        }
    )


def all_metrics(data_dir, run_id):
    with Database(db_path(data_dir)) as db:
        rows, _ = metrics_since(db, run_id, cursor=0, limit=100_000)
        names = set(metric_names(db, run_id))
    return rows, names


@pytest.fixture
def launcher(data_dir):
    launcher = Launcher(data_dir, max_concurrent=1)
    yield launcher
    # Never leave a worker behind.
    for run in launcher.list():
        if run.status == RunStatus.RUNNING and run.pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)


def test_grpo_and_rloo_runs_queue_then_leave_metrics_samples_and_status(launcher, data_dir):
    configs = {"grpo": tiny_config("grpo"), "rloo": tiny_config("rloo")}
    run_ids = {algorithm: launcher.start(config) for algorithm, config in configs.items()}
    with Database(db_path(data_dir)) as db:  # one run at a time: the second waits its turn
        assert run_store.get_run(db, run_ids["rloo"]).status == RunStatus.QUEUED
    for algorithm, run_id in run_ids.items():
        run = wait_for(data_dir, run_id, lambda r: r.status in FINAL)
        assert run.status == RunStatus.COMPLETED, run.error_traceback
        assert run.last_step == 3
        assert_run_recorded(data_dir, run_id, configs[algorithm])


def assert_run_recorded(data_dir, run_id, config):
    rows, names = all_metrics(data_dir, run_id)
    components = [c.name for c in config.reward.components if c.enabled]
    expected = {
        "reward/total",
        "loss/policy",
        "completions/mean_length",
        "reward/zero_std_fraction",
        "eval/accuracy",
        "eval/format_rate",
        "eval/n_scored",  # the n of the accuracy's interval
    }
    expected |= {f"rewards/{name}" for name in components}
    assert expected <= names
    reward_steps = sorted(r.step for r in rows if r.name == "reward/total")
    assert reward_steps == [1, 2, 3]

    with Database(db_path(data_dir)) as db:
        steps = sample_store.sample_steps(db, run_id)
        samples = sample_store.samples_at(db, run_id, steps[-1])
    assert steps == [1, 2, 3]
    assert samples and all(s.completion is not None for s in samples)
    trace = samples[0].trace
    assert [t["name"] for t in trace] == components
    scored = [s for s in samples if s.total is not None]
    for s in scored:
        contributions = [t["contribution"] for t in s.trace if t["contribution"] is not None]
        assert s.total == pytest.approx(sum(contributions))
    assert (data_dir / "runs" / run_id / "final" / "config.json").exists()


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_stop_saves_a_checkpoint_and_resume_continues(launcher, data_dir, algorithm):
    run_id = launcher.start(tiny_config(algorithm, steps=40))
    wait_for(data_dir, run_id, lambda r: (r.last_step or 0) >= 1)
    launcher.stop(run_id)
    run = wait_for(data_dir, run_id, lambda r: r.status in FINAL)
    assert run.status == RunStatus.STOPPED, run.error_traceback
    stopped_at = run.last_step
    checkpoint = latest_checkpoint(data_dir / "runs" / run_id)
    assert checkpoint is not None and checkpoint.name == f"checkpoint-{stopped_at}"

    # Shorten the run so the resumed part is quick; the run's row is its config's record (the
    # resumed worker's config.yaml is written from it).
    config = recorded_config(data_dir, run_id)
    config.training.steps = stopped_at + 2
    with Database(db_path(data_dir)) as db:
        run_store.update_run(db, run_id, config=config.to_dict())
    launcher.resume(run_id)
    run = wait_for(data_dir, run_id, lambda r: r.status in FINAL and r.status != RunStatus.STOPPED)
    assert run.status == RunStatus.COMPLETED, run.error_traceback
    assert run.last_step == stopped_at + 2
    rows, _ = all_metrics(data_dir, run_id)
    # One series per metric, no step twice: PPO's KL to its reference is rewound like the reward.
    for name in ["reward/total"] + (["ppo/kl_to_ref"] if algorithm == "ppo" else []):
        assert [r.step for r in rows if r.name == name] == list(range(1, stopped_at + 3)), name


def catches_sigterm(pid: int) -> bool:
    """Whether the process has installed a SIGTERM handler (Linux: SigCgt in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def test_stop_while_the_worker_starts_ends_the_run_stopped(launcher, data_dir):
    run_id = launcher.start(tiny_config("grpo", steps=40))
    with Database(db_path(data_dir)) as db:
        pid = run_store.get_run(db, run_id).pid
    deadline = time.monotonic() + 30
    while not catches_sigterm(pid) and time.monotonic() < deadline:
        time.sleep(0.005)
    launcher.stop(run_id)  # the worker is still importing torch and loading the model
    run = wait_for(data_dir, run_id, lambda r: r.status in FINAL)
    assert run.status == RunStatus.STOPPED, run.error_message
    assert not run.last_step  # stopped before training: no step, no checkpoint
    assert latest_checkpoint(data_dir / "runs" / run_id) is None


def test_killed_worker_is_marked_interrupted_by_the_scan(launcher, data_dir):
    run_id = launcher.start(tiny_config("grpo", steps=200))
    run = wait_for(data_dir, run_id, lambda r: (r.last_step or 0) >= 1)
    os.killpg(run.pid, signal.SIGKILL)
    time.sleep(0.5)
    launcher.scan()
    with Database(db_path(data_dir)) as db:
        run = run_store.get_run(db, run_id)
    assert run.status == RunStatus.INTERRUPTED
    assert "resume" in run.error_message


def test_config_error_is_rejected_before_any_process_starts(data_dir, tmp_path, engine_cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  steps: -5\n", encoding="utf-8")
    result = engine_cli("train", bad, "--data-dir", data_dir)
    assert result.returncode == 2
    assert "training.steps" in result.stderr
    assert "Traceback" not in result.stderr
    with Database(db_path(data_dir)) as db:
        assert run_store.list_runs(db) == []
