"""What the launcher asks the machine per dispatch: nvidia-smi once per launcher for the GPU
set, again only when a run must choose between GPUs; one scan for dead workers per command.

nvidia-smi here is a real executable placed first on PATH: it appends each call to a file and
prints the GPU table the test writes, as the real one prints it (index, free, total in MiB).
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engine import cli
from engine.config.run_config import RunConfig
from engine.run.launcher import Launcher
from engine.runtime.devices import Assignment
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

THREE_GPUS = "0, 81000, 81559\n1, 20000, 81559\n2, 79000, 81559\n"


class FakeSmi:
    """A real ``nvidia-smi`` script on PATH that logs its calls and prints ``table``."""

    def __init__(self, folder: Path) -> None:
        self.table = folder / "gpus.csv"
        self.calls_file = folder / "calls.log"
        self.table.write_text("")
        self.calls_file.write_text("")
        script = folder / "bin" / "nvidia-smi"
        script.parent.mkdir()
        script.write_text(f'#!/bin/sh\necho "$*" >> "{self.calls_file}"\ncat "{self.table}"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        self.bin = script.parent

    @property
    def calls(self) -> int:
        return len(self.calls_file.read_text().splitlines())


@pytest.fixture
def smi(tmp_path, monkeypatch) -> FakeSmi:
    fake = FakeSmi(tmp_path)
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return fake


def hold(launcher: Launcher, run_id: str, gpu_ids: list[int]) -> str:
    """A run folder whose run holds ``gpu_ids`` (as a dispatch records it)."""
    folder = launcher.run_dir(run_id)
    folder.mkdir(parents=True)
    Assignment(gpu_ids=gpu_ids).save(folder)
    return run_id


def test_dispatches_read_the_gpu_set_once_per_launcher(data_dir, smi):
    smi.table.write_text(THREE_GPUS)
    launcher = Launcher(data_dir)
    for _ in range(5):  # the supervisor's rounds with nothing queued
        assert launcher.dispatch() == []
    assert launcher.max_concurrent == 3
    assert smi.calls == 1
    assert smi.calls_file.read_text().startswith("--query-gpu=index,memory.free,memory.total")


def test_the_studio_s_own_gpu_subset_is_read_once_too(data_dir, smi, monkeypatch):
    smi.table.write_text(THREE_GPUS)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    launcher = Launcher(data_dir)
    assert [launcher.dispatch() for _ in range(3)] == [[], [], []]
    assert [g.index for g in launcher.machine_gpus] == [1, 2] and launcher.max_concurrent == 2
    assert smi.calls == 1


def test_free_memory_is_read_again_only_when_a_run_chooses_between_gpus(data_dir, smi):
    smi.table.write_text(THREE_GPUS)
    launcher = Launcher(data_dir)
    assert launcher.max_concurrent == 3 and smi.calls == 1
    # GPU 2 is now the freest: the choice reads the memory as it is, not as it was.
    smi.table.write_text("0, 1000, 81559\n1, 20000, 81559\n2, 79000, 81559\n")
    assert launcher.assign(RunConfig(), [], 3) == Assignment(gpu_ids=[2])
    assert smi.calls == 2
    # No choice, no call: the one free GPU, a named GPU, or none free (the run waits).
    held = [hold(launcher, "held-0", [0]), hold(launcher, "held-2", [2])]
    assert launcher.assign(RunConfig(), held, 3) == Assignment(gpu_ids=[1])
    named = RunConfig.from_dict({"training": {"gpu_ids": "0"}})
    assert launcher.assign(named, [], 3) == Assignment(gpu_ids=[0])
    held.append(hold(launcher, "held-1", [1]))
    assert launcher.assign(RunConfig(), held, 3) is None
    assert smi.calls == 2
    # A foreground run does not wait: with none free it takes the least busy, read now.
    assert launcher.assign(RunConfig(), held, 3, wait=False) == Assignment(gpu_ids=[2])
    assert smi.calls == 3


def test_a_machine_without_gpus_asks_once_and_shares_cores(data_dir, smi):
    launcher = Launcher(data_dir)  # nvidia-smi lists no GPU
    for _ in range(3):
        assert launcher.dispatch() == []
    assignment = launcher.assign(RunConfig(), [], launcher.max_concurrent)
    assert assignment is not None and assignment.gpu_ids == []
    assert smi.calls == 1


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("command", ["train", "runs"])
def test_a_cli_command_scans_for_dead_workers_once(command, data_dir, smi, tmp_path, caplog):
    lost = Launcher(data_dir).record(RunConfig.from_dict({"name": "lost"}), pid=dead_pid())
    config = RunConfig.from_dict({"model": {"name_or_path": str(tmp_path / "no-such-model")}})
    config.save(tmp_path / "run.yaml")
    args = {"train": ["train", str(tmp_path / "run.yaml")], "runs": ["runs"]}[command]
    caplog.set_level(logging.DEBUG, logger="engine.run.launcher")
    code = cli.main([*args, "--data-dir", str(data_dir)])
    # train stops at the missing model, after the scan and the GPU choice it is about.
    assert code == (2 if command == "train" else 0)
    scans = [r for r in caplog.records if r.getMessage().startswith("Scanning")]
    assert len(scans) == 1, [r.getMessage() for r in scans]
    with Database(db_path(data_dir)) as db:
        assert run_store.get_run(db, lost).status == RunStatus.INTERRUPTED
