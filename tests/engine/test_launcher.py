import sys

import pytest

from engine.config import RunConfig
from engine.launcher import Launcher, worker_command
from storage import runs as run_store
from storage.db import Database
from storage.paths import db_path
from storage.run_caps import ActiveRunCaps, TooManyActiveRunsError


def test_one_gpu_runs_the_worker_directly_without_a_shell(tmp_path):
    cmd = worker_command(tmp_path / "config.yaml", "grpo-1", tmp_path, num_gpus=1)
    assert cmd[:5] == [sys.executable, "-m", "engine", "run", str(tmp_path / "config.yaml")]
    assert cmd[-4:] == ["--run-id", "grpo-1", "--data-dir", str(tmp_path)]


def test_several_gpus_go_through_accelerate_launch(tmp_path):
    cmd = worker_command(tmp_path / "config.yaml", "grpo-1", tmp_path, num_gpus=4)
    assert cmd[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert cmd[cmd.index("--num_processes") + 1] == "4"
    assert cmd[cmd.index("-m", 3) : cmd.index("-m", 3) + 3] == ["-m", "engine", "run"]


def test_runs_are_recorded_with_their_owner_and_the_cli_lists_it(data_dir, engine_cli):
    launcher = Launcher(data_dir)
    cli_run = launcher.record(RunConfig(), pid=None)
    alice_run = launcher.record(RunConfig(), owner="user:alice", caps=ActiveRunCaps(per_owner=1))
    with pytest.raises(TooManyActiveRunsError, match=r"per user \(1\)"):
        launcher.record(RunConfig(), owner="user:alice", caps=ActiveRunCaps(per_owner=1))
    with Database(db_path(data_dir)) as db:
        assert run_store.get_run(db, cli_run).owner == "local"
        assert run_store.get_run(db, alice_run).owner == "user:alice"
    assert sorted(p.name for p in (data_dir / "runs").iterdir()) == sorted([cli_run, alice_run])
    listed = engine_cli("runs", "--data-dir", data_dir)
    assert listed.returncode == 0, listed.stderr
    assert f"{alice_run}" in listed.stdout and "user:alice" in listed.stdout
