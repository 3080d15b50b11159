import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.config.run_config import RunConfig
from engine.run.launcher import Launcher, worker_command
from engine.run.saved_models import recorded_config
from storage import runs as run_store
from storage.paths import db_path
from storage.records.logs import logs_since
from storage.run_caps import ActiveRunCaps, TooManyActiveRunsError
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

REPO = Path(__file__).resolve().parents[2]


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


# ---- dead workers and the run limit (issue 11, R4) ------------------------------------------
def dead_pid() -> int:
    """The pid of a real process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def record_running(data_dir: Path, pid: int) -> str:
    """A run recorded as running in process ``pid`` (as ``engine train`` records itself)."""
    return Launcher(data_dir).record(RunConfig.from_dict({"name": "tiny"}), pid=pid)


def status_of(data_dir: Path, run_id: str) -> RunStatus:
    with Database(db_path(data_dir)) as db:
        return run_store.get_run(db, run_id).status


def test_the_scan_marks_a_run_whose_worker_died_and_keeps_a_live_one(data_dir):
    lost = record_running(data_dir, dead_pid())
    alive = record_running(data_dir, os.getpid())
    assert Launcher(data_dir).scan() == [lost]
    assert status_of(data_dir, lost) == RunStatus.INTERRUPTED
    assert status_of(data_dir, alive) == RunStatus.RUNNING


def test_a_cli_command_marks_dead_runs_on_its_own(data_dir, engine_cli, tmp_path):
    lost = record_running(data_dir, dead_pid())
    other = record_running(data_dir, os.getpid())
    # export reads one other run; nobody listed runs, yet the dead one is found.
    result = engine_cli("export", other, tmp_path / "out", "--data-dir", data_dir)
    assert result.returncode == 0, result.stderr
    assert status_of(data_dir, lost) == RunStatus.INTERRUPTED


DISPATCHER = """
import sys
from engine.run.launcher import Launcher
Launcher(sys.argv[1], max_concurrent=int(sys.argv[2])).dispatch()
"""


def test_concurrent_dispatchers_and_finishing_workers_never_exceed_the_limit(data_dir):
    limit, queued, dispatchers = 2, 3, 3
    launcher = Launcher(data_dir, max_concurrent=limit)
    run_ids = [launcher.record(RunConfig.from_dict({"name": f"r{i}"})) for i in range(queued)]
    for run_id in run_ids:  # each real worker fails at its model load and hands its slot on
        config = recorded_config(data_dir, run_id)
        config.model.name_or_path = str(data_dir / "no-such-model")
        with Database(db_path(data_dir)) as db:
            run_store.update_run(db, run_id, config=config.to_dict())
    procs = [
        subprocess.Popen([sys.executable, "-c", DISPATCHER, str(data_dir), str(limit)], cwd=REPO)
        for _ in range(dispatchers)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with Database(db_path(data_dir)) as db:
            runs = run_store.list_runs(db)
            starts = {
                run_id: sum("Loading model" in line.message for line in logs_since(db, run_id)[0])
                for run_id in run_ids
            }
        if all(run.status == RunStatus.FAILED for run in runs):
            break
        time.sleep(0.5)
    assert [run.status for run in runs] == [RunStatus.FAILED] * queued, [r.status for r in runs]
    assert starts == dict.fromkeys(run_ids, 1)  # no run was started twice
    # The running intervals the database recorded never overlap more than the limit.
    edges = sorted([(r.started_at, 1) for r in runs] + [(r.ended_at, -1) for r in runs])
    running = peak = 0
    for _, delta in edges:
        running += delta
        peak = max(peak, running)
    assert peak <= limit
