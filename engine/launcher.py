"""Start, stop, resume, delete and list runs; each run is a detached worker process.

A run is started from its saved config with ``python -m engine run`` (or ``accelerate launch``
for several GPUs), without a shell, in its own session so it outlives a restart of the web
server. Stopping sends SIGTERM to the run's process group: the worker finishes its step, saves a
checkpoint and records ``stopped``. At most ``max_concurrent`` runs train at once; later ones wait
``queued`` and start as slots free up.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from engine.config import RunConfig
from engine.input_policy import InputPolicy
from engine.preflight import check_inputs
from engine.worker import latest_checkpoint
from storage import runs as run_store
from storage.db import Database
from storage.paths import db_path, runs_dir
from storage.schema import RunStatus

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
WORKER_LOG = "worker.log"
# A running worker beats every few seconds; this long without one means it is gone.
STALE_HEARTBEAT_S = 120.0
ACTIVE = (RunStatus.RUNNING,)
RESUMABLE = (RunStatus.STOPPED, RunStatus.INTERRUPTED, RunStatus.FAILED)


class LaunchError(RuntimeError):
    """A run cannot be started, stopped, resumed or deleted in its current state."""


def worker_command(config_path: Path, run_id: str, data_dir: Path, num_gpus: int) -> list[str]:
    """The argv that runs one worker; several GPUs go through ``accelerate launch``."""
    args = [
        "-m",
        "engine",
        "run",
        str(config_path),
        "--run-id",
        run_id,
        "--data-dir",
        str(data_dir),
    ]
    if num_gpus > 1:
        return [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--num_processes",
            str(num_gpus),
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",  # the trainer sets bf16 itself where the GPU supports it
            "--dynamo_backend",
            "no",
            *args,
        ]
    return [sys.executable, *args]


def process_alive(pid: int | None, started_at: float | None = None) -> bool:
    """True if ``pid`` is a live (non-zombie) process that started no later than the run did."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        # A recycled pid belongs to a process created after our worker was started.
        return started_at is None or proc.create_time() <= started_at + 5.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


class Launcher:
    """Owns the lifecycle of worker processes for one data dir."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        max_concurrent: int | None = None,
        policy: InputPolicy | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.policy = policy  # set for the web app: what visitors' runs may read, hub token
        self.max_concurrent = max_concurrent or int(
            os.environ.get("STUDIO_MAX_CONCURRENT_RUNS", "1")
        )
        self._children: dict[str, subprocess.Popen] = {}

    def _db(self) -> Database:
        return Database(db_path(self.data_dir))

    def run_dir(self, run_id: str) -> Path:
        return runs_dir(self.data_dir) / run_id

    # ---- lifecycle ------------------------------------------------------------------------
    def record(self, config: RunConfig, *, pid: int | None = None) -> str:
        """Save the config in a new run folder and record the run: ``queued``, or ``running``
        in process ``pid`` (a foreground CLI run). Returns the run id.

        Raises ``ConfigError`` (naming the field) when the model or data cannot be used, before
        anything is written.
        """
        check_inputs(config, self.policy)
        run_id = run_store.new_run_id(config.algorithm)
        run_dir = self.run_dir(run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        config.save(run_dir / CONFIG_FILE)
        with self._db() as db:
            run_store.create_run(
                db,
                run_id=run_id,
                name=config.name or run_id,
                algorithm=config.algorithm,
                config=config.to_dict(),
                output_dir=str(run_dir),
                total_steps=config.training.steps,
                status=RunStatus.QUEUED if pid is None else RunStatus.RUNNING,
            )
            if pid is not None:
                run_store.update_run(db, run_id, pid=pid, heartbeat_at=time.time())
        return run_id

    def start(self, config: RunConfig) -> str:
        """Record the run and start it (or queue it); returns the run id at once."""
        run_id = self.record(config)
        self.dispatch()
        return run_id

    def dispatch(self) -> list[str]:
        """Start queued runs while fewer than ``max_concurrent`` are running."""
        self.scan()
        started = []
        with self._db() as db:
            while len(run_store.list_runs(db, statuses=ACTIVE)) < self.max_concurrent:
                run = run_store.next_queued(db)
                if run is None:
                    break
                self._spawn(db, run.id)
                started.append(run.id)
        return started

    def _spawn(self, db: Database, run_id: str) -> None:
        run_dir = self.run_dir(run_id)
        config = RunConfig.load(run_dir / CONFIG_FILE)
        cmd = worker_command(run_dir / CONFIG_FILE, run_id, self.data_dir, config.training.num_gpus)
        env = {**os.environ, "STUDIO_DATA_DIR": str(self.data_dir), "PYTHONUNBUFFERED": "1"}
        if self.policy is not None:
            env = self.policy.worker_env(env)
        with open(run_dir / WORKER_LOG, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=Path(__file__).resolve().parent.parent,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        self._children[run_id] = proc
        now = time.time()
        run_store.update_run(
            db,
            run_id,
            status=RunStatus.RUNNING,
            pid=proc.pid,
            started_at=now,
            heartbeat_at=now,
            ended_at=None,
        )
        logger.info("Started run %s (pid %d): %s", run_id, proc.pid, " ".join(cmd))

    def stop(self, run_id: str) -> None:
        """Ask a running run to save and stop; a queued run is simply marked stopped."""
        with self._db() as db:
            run = self._get(db, run_id)
            if run.status == RunStatus.QUEUED:
                run_store.set_status(db, run_id, RunStatus.STOPPED)
                return
            if run.status != RunStatus.RUNNING:
                raise LaunchError(f"run {run_id} is {run.status}, not running")
            if not process_alive(run.pid, run.started_at):
                run_store.set_status(db, run_id, RunStatus.INTERRUPTED)
                return
        # The worker leads its own session, so its pid is the group id of all its processes.
        os.killpg(run.pid, signal.SIGTERM)

    def resume(self, run_id: str) -> None:
        """Queue a stopped, interrupted or failed run to continue from its last checkpoint."""
        with self._db() as db:
            run = self._get(db, run_id)
            if run.status not in RESUMABLE:
                raise LaunchError(
                    f"run {run_id} is {run.status}; only {', '.join(RESUMABLE)} runs can resume"
                )
            if latest_checkpoint(self.run_dir(run_id)) is None:
                logger.info("Run %s has no checkpoint yet: it restarts from step 0", run_id)
            run_store.update_run(
                db,
                run_id,
                status=RunStatus.QUEUED,
                error_message=None,
                error_traceback=None,
                ended_at=None,
            )
        self.dispatch()

    def delete(self, run_id: str) -> None:
        """Remove a run that is not running, with its metrics, samples, logs and files."""
        with self._db() as db:
            run = self._get(db, run_id)
            if run.status == RunStatus.RUNNING and process_alive(run.pid, run.started_at):
                raise LaunchError(f"run {run_id} is running; stop it before deleting it")
            run_store.delete_run(db, run_id)
        shutil.rmtree(self.run_dir(run_id), ignore_errors=True)

    def list(self) -> list:
        self.scan()
        with self._db() as db:
            return run_store.list_runs(db)

    def scan(self) -> list[str]:
        """Mark runs whose worker is gone (or silent for too long) as interrupted."""
        for run_id, proc in list(self._children.items()):
            if proc.poll() is not None:  # reap finished children so their pids read as gone
                del self._children[run_id]
        lost = []
        now = time.time()
        with self._db() as db:
            for run in run_store.list_runs(db, statuses=ACTIVE):
                stale = run.heartbeat_at is not None and now - run.heartbeat_at > STALE_HEARTBEAT_S
                if stale or not process_alive(run.pid, run.started_at):
                    run_store.set_status(
                        db,
                        run.id,
                        RunStatus.INTERRUPTED,
                        error="the worker process ended without recording a final status "
                        "(killed, out of memory, or the machine restarted); resume it to "
                        "continue from the last checkpoint",
                    )
                    lost.append(run.id)
        return lost

    @staticmethod
    def _get(db: Database, run_id: str):
        run = run_store.get_run(db, run_id)
        if run is None:
            raise LaunchError(f"no run with id {run_id!r}")
        return run
