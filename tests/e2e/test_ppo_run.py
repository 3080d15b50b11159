"""PPO through a real worker subprocess on the default model (stop and resume: test_runs.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from run_waits import wait_for
from test_runs import FINAL, all_metrics, launcher, tiny_config  # noqa: F401

from engine.runtime.checkpoints import latest_checkpoint
from engine.tracking import metric_names as m
from storage import runs as run_store
from storage.paths import db_path
from storage.records import samples as sample_store
from storage.records.distributions import distributions_since
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

pytestmark = pytest.mark.slow

PPO_METRICS = {
    "ppo/approx_kl",
    "policy/clip_ratio/region_mean",
    "loss/policy",
    "loss/value",
    "policy/entropy",
    "ppo/explained_variance",
    "ppo/kl_to_ref",
    "policy/kl",
    "reward/total",
    "completions/mean_length",
    "completions/clipped_ratio",
    "eval/accuracy",
    "eval/format_rate",
}


def test_three_step_ppo_run_leaves_metrics_samples_and_a_checkpoint(launcher, data_dir):  # noqa: F811
    config = tiny_config("ppo")
    run_id = launcher.start(config)
    run = wait_for(data_dir, run_id, lambda r: r.status in FINAL)
    assert run.status == RunStatus.COMPLETED, run.error_traceback
    assert run.last_step == 3

    rows, names = all_metrics(data_dir, run_id)
    components = [c.name for c in config.reward.components if c.enabled]
    assert PPO_METRICS | {f"rewards/{name}" for name in components} <= names
    assert sorted(r.step for r in rows if r.name == "reward/total") == [1, 2, 3]
    assert sorted(r.step for r in rows if r.name == "eval/accuracy") == [0, 3]

    with Database(db_path(data_dir)) as db:
        steps = sample_store.sample_steps(db, run_id)
        samples = sample_store.samples_at(db, run_id, steps[-1])
        distributions, _ = distributions_since(db, run_id)
    assert steps == [1, 2, 3]
    # The whole batch of each logged step as distributions, as for GRPO and RLOO.
    batch = config.training.prompts_per_step * config.generation.num_generations
    counted = {(d.step, d.name): d.count for d in distributions}
    assert all(counted[step, m.DIST_REWARD] == batch for step in (1, 2, 3)), counted
    assert counted[3, m.DIST_ADVANTAGE] == counted[3, m.DIST_LENGTH] == batch
    assert samples and all(s.value is not None and s.advantage is not None for s in samples)
    assert [t["name"] for t in samples[0].trace] == components
    for s in samples:
        if s.total is not None:
            contributions = [t["contribution"] for t in s.trace if t["contribution"] is not None]
            assert s.total == pytest.approx(sum(contributions))

    run_dir = data_dir / "runs" / run_id
    checkpoint = latest_checkpoint(run_dir)
    assert checkpoint is not None and checkpoint.name == "checkpoint-3"
    assert (checkpoint / "policy" / "config.json").exists()
    assert (checkpoint / "critic.safetensors").exists()
    assert (run_dir / "final" / "config.json").exists()


def test_ppo_trains_with_two_data_parallel_processes(data_dir):
    """Two processes (torchrun, gloo on CPU): gradients synchronised, only rank 0 writes."""
    config = tiny_config("ppo", steps=2, num_gpus=2, eval_samples=4, samples_per_log=4)
    config.ppo.num_minibatches = 2
    config.ppo.ppo_epochs = 2
    run_id = run_store.new_run_id("ppo")
    run_dir = data_dir / "runs" / run_id
    run_dir.mkdir(parents=True)
    config.save(run_dir / "config.yaml")
    with Database(db_path(data_dir)) as db:
        run_store.create_run(
            db,
            run_id=run_id,
            name="two processes",
            algorithm="ppo",
            config=config.to_dict(),
            output_dir=str(run_dir),
            total_steps=2,
        )
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    command += ["-m", "engine", "run", str(run_dir / "config.yaml"), "--run-id", run_id]
    command += ["--data-dir", str(data_dir)]
    env = dict(os.environ, ACCELERATE_USE_CPU="true", OMP_NUM_THREADS="1")
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("Loading model") == 2  # both ranks trained

    with Database(db_path(data_dir)) as db:
        run = run_store.get_run(db, run_id)
        samples = sample_store.samples_at(db, run_id, 2)
    assert run.status == RunStatus.COMPLETED and run.last_step == 2
    rows, _ = all_metrics(data_dir, run_id)
    assert sorted(r.step for r in rows if r.name == "reward/total") == [1, 2]  # written once
    assert len(samples) == 4  # gathered from both ranks, stored by rank 0
    assert latest_checkpoint(run_dir).name == "checkpoint-2"
