"""Real workers sharing one machine: each gets its own CPU cores, or its own GPU, or waits."""

from __future__ import annotations

import contextlib
import os
import signal

import psutil
import pytest
from run_waits import run_status, wait

from engine.config.run_config import RunConfig
from engine.run.launcher import Launcher
from engine.runtime.devices import Assignment, Gpu
from storage.sqlite.schema import RunStatus

pytestmark = pytest.mark.slow

GIB = 1024**3


def long_config(name: str) -> RunConfig:
    """A run that trains for longer than the test looks at it."""
    return RunConfig.from_dict(
        {
            "name": name,
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {"steps": 10_000, "prompts_per_step": 1, "eval_samples": 0},
        }
    )


@pytest.fixture
def started(data_dir):
    launchers: list[Launcher] = []
    yield launchers
    for launcher in launchers:  # never leave a worker behind
        for run in launcher.list():
            if run.status == RunStatus.RUNNING and run.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.pid, signal.SIGKILL)


def test_two_cpu_runs_each_get_their_own_cores(data_dir, started):
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs 2 cores")
    launcher = Launcher(data_dir, max_concurrent=2)
    started.append(launcher)
    ids = [launcher.start(long_config(f"share {i}")) for i in range(2)]
    shares = [Assignment.load(launcher.run_dir(i)).cpu_cores for i in ids]
    half = len(cores) // 2
    assert shares == [cores[:half], cores[half : 2 * half]]
    for run_id, share in zip(ids, shares, strict=True):
        pid = run_status(data_dir, run_id).pid
        proc = psutil.Process(pid)
        assert proc.environ()["OMP_NUM_THREADS"] == str(half)
        # The worker pins itself once it starts; every thread it makes inherits the pinning.
        wait(lambda p=proc, s=share: p.cpu_affinity() == s, what=f"{run_id} pinned to {share}")


def test_a_run_waits_queued_while_its_gpu_is_taken(data_dir, started):
    """One GPU and two slots: the second run waits for the GPU, not for a slot. (The GPU list
    is given, as nvidia-smi would report it, so the queue runs on a machine without one.)"""
    one_gpu = [Gpu(index=0, free_bytes=80 * GIB, total_bytes=80 * GIB)]
    launcher = Launcher(data_dir, max_concurrent=2, gpus=lambda: one_gpu)
    started.append(launcher)
    first = launcher.start(long_config("gpu first"))
    second = launcher.start(long_config("gpu second"))
    run = run_status(data_dir, first)
    assert run.status == RunStatus.RUNNING
    env = psutil.Process(run.pid).environ()
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert run_status(data_dir, second).status == RunStatus.QUEUED
    assert launcher.dispatch() == []  # still taken
    os.killpg(run.pid, signal.SIGKILL)
    wait(lambda: not psutil.pid_exists(run.pid) or psutil.Process(run.pid).status() == "zombie")
    assert launcher.dispatch() == [second]  # the GPU is free again
    assert Assignment.load(launcher.run_dir(second)).gpu_ids == [0]
