"""Start, stop, resume, delete and list runs; each run is a detached worker process.

A run is started from its saved config with ``python -m engine run`` (or ``accelerate launch``
for several GPUs), without a shell, in its own session so it outlives a restart of the web
server. Stopping sends SIGTERM to the run's process group: the worker finishes its step, saves a
checkpoint and records ``stopped``. At most ``max_concurrent`` runs train at once (default: one
per GPU, or one on a machine without GPUs); later ones wait ``queued`` and start as slots and
GPUs free up. Each worker sees only its own GPUs, or on CPU its share of the cores
(:mod:`engine.runtime.devices`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from engine.config.input_policy import InputPolicy, worker_env
from engine.models.loading import resolve_spec
from engine.run import machines, memory_watch
from engine.run.distributed import launch_args, layer_class, worker_args, write_fsdp_config
from engine.runtime import layout as run_layout
from engine.runtime.checkpoints import latest_checkpoint
from engine.runtime.devices import Assignment, Gpu, core_share, list_gpus, machine_cores, pick_gpus
from engine.runtime.layout import CONFIG_FILE as CONFIG_FILE  # its import path before run_layout
from storage import runs as run_store
from storage.paths import db_path
from storage.run_caps import ActiveRunCaps, TooManyActiveRunsError
from storage.sqlite.db import Database
from storage.sqlite.schema import LOCAL_OWNER, RunStatus

if TYPE_CHECKING:
    from engine.config.run_config import RunConfig

logger = logging.getLogger(__name__)

# A running worker beats every few seconds; this long without one means it is gone.
STALE_HEARTBEAT_S = 120.0
ACTIVE = (RunStatus.RUNNING,)
RESUMABLE = (RunStatus.STOPPED, RunStatus.INTERRUPTED, RunStatus.FAILED)


class LaunchError(RuntimeError):
    """A run cannot be started, stopped, resumed or deleted in its current state."""


def worker_command(
    config_path: Path,
    run_id: str,
    data_dir: Path,
    num_gpus: int,
    fsdp_config: Path | None = None,
) -> list[str]:
    """The argv that runs one worker; several GPUs go through ``accelerate launch`` (with
    ``fsdp_config``, FSDP as that file sets it; else DDP)."""
    args = worker_args(config_path, run_id, data_dir)
    if num_gpus > 1:
        return [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            *launch_args(num_gpus, fsdp_config),
            *args,
        ]
    return [sys.executable, *args]


def run_command(config: RunConfig, run_dir: Path, run_id: str, data_dir: Path) -> list[str]:
    """The worker argv of a recorded run (machine 0's, over several machines). Writes the files
    it reads: its copy of the recorded ``config`` (the row is the record; this copy only crosses
    to the new process, written anew at each start), and any FSDP or machines config."""
    config.save(run_layout.config_path(run_dir))
    t = config.training
    fsdp, layer_cls = t.processes > 1 and t.distributed == "fsdp", None
    if fsdp:
        spec = resolve_spec(config.model)
        layer_cls = layer_class(spec.name_or_path.strip(), spec.gguf_file)
    if t.num_machines > 1:
        file = machines.write_machines_config(run_dir, t, layer_cls)
        config_file = run_layout.config_path(run_dir)
        return machines.machine_command(file, 0, config_file, run_id, data_dir, sys.executable)
    fsdp_config = write_fsdp_config(run_dir, t.num_gpus, layer_cls) if fsdp else None
    return worker_command(
        run_layout.config_path(run_dir), run_id, data_dir, t.num_gpus, fsdp_config
    )


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
        gpus: Callable[[], list[Gpu]] = list_gpus,
        policy: InputPolicy | None = None,
        max_worker_bytes: int | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.max_worker_bytes = max_worker_bytes  # a public app's memory cap per run
        self._query_gpus = gpus  # nvidia-smi: a subprocess of up to seconds, so asked sparingly
        self.policy = policy  # set for the web app: what visitors' runs may read, hub token
        env_limit = os.environ.get("STUDIO_MAX_CONCURRENT_RUNS", "").strip()
        self._max_concurrent = max_concurrent or (int(env_limit) if env_limit else None)
        self._children: dict[str, subprocess.Popen] = {}

    @functools.cached_property
    def machine_gpus(self) -> list[Gpu]:
        """This machine's GPUs, read once per launcher: the set of GPUs does not change while
        the app runs (the supervisor dispatches every few seconds, each time asking for the
        slot count). Their free memory does change; :meth:`assign` reads it again when it
        has to choose between GPUs."""
        return self._query_gpus()

    @property
    def max_concurrent(self) -> int:
        """Runs that train at once: as set, else one per GPU (one without GPUs)."""
        return self._max_concurrent or max(1, len(self.machine_gpus))

    def _db(self) -> Database:
        return Database(db_path(self.data_dir))

    def run_dir(self, run_id: str) -> Path:
        return run_layout.run_dir(self.data_dir, run_id)

    # ---- lifecycle ------------------------------------------------------------------------
    def record(
        self,
        config: RunConfig,
        *,
        pid: int | None = None,
        owner: str = LOCAL_OWNER,
        caps: ActiveRunCaps | None = None,
        policy: InputPolicy | None = None,
    ) -> str:
        """Record the run of ``owner`` with its config (the database row is the run's one record
        of it) and make its folder: ``queued``, or ``running`` in process ``pid`` (a foreground
        CLI run). Returns the run id. ``policy``
        (default: the launcher's) limits what the run may read: the owner's scope of it.

        Raises ``ConfigError`` (naming the field) when the model or data cannot be used or the
        run would not fit the data dir's free disk, before
        anything is written, and ``TooManyActiveRunsError`` when the run would pass one of
        ``caps`` on queued and running runs (the folder is removed again).
        """
        from engine.run.preflight import check_inputs  # loads torch, which listing runs never needs

        policy = policy or self.policy
        check_inputs(config, policy, self.data_dir)
        run_id = run_store.new_run_id(config.algorithm)
        folder = self.run_dir(run_id)
        folder.mkdir(parents=True, exist_ok=True)
        if policy is not None:
            policy.mark_run(folder)
        with self._db() as db:
            try:
                run_store.create_run(
                    db,
                    run_id=run_id,
                    name=config.name or run_id,
                    algorithm=config.algorithm,
                    config=config.to_dict(),
                    output_dir=str(folder),
                    total_steps=config.training.steps,
                    status=RunStatus.QUEUED if pid is None else RunStatus.RUNNING,
                    owner=owner,
                    caps=caps,
                )
            except TooManyActiveRunsError:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            if pid is not None:
                run_store.update_run(db, run_id, pid=pid, heartbeat_at=time.time())
        return run_id

    def start(
        self,
        config: RunConfig,
        *,
        owner: str = LOCAL_OWNER,
        caps: ActiveRunCaps | None = None,
        policy: InputPolicy | None = None,
    ) -> str:
        """Record the run of ``owner`` and start it (or queue it); returns the run id at once."""
        run_id = self.record(config, owner=owner, caps=caps, policy=policy)
        self.dispatch()
        return run_id

    def dispatch(self) -> list[str]:
        """Start queued runs while fewer than ``max_concurrent`` are running.

        Count and start happen under an exclusive lock on the data dir, so the app, the CLI and
        finishing workers dispatching at once never start more runs than the limit.
        """
        from engine.config.run_config import RunConfig  # only starting a run reads its config

        started = []
        slots = self.max_concurrent
        with self._dispatch_lock(), self._db() as db:
            self.scan()
            while len(active := run_store.list_runs(db, statuses=ACTIVE)) < slots:
                run = run_store.next_queued(db)
                if run is None:
                    break
                config = RunConfig.from_dict(run.config)  # as recorded: the row is the record
                assignment = self.assign(config, [r.id for r in active], slots)
                if assignment is None:  # its GPUs are taken: it waits, and so do later runs
                    break
                self._spawn(db, run.id, config, assignment)
                started.append(run.id)
        return started

    @contextlib.contextmanager
    def _dispatch_lock(self):
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / run_layout.DISPATCH_LOCK, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
            yield

    def assign(
        self, config: RunConfig, active_ids: list[str], slots: int, *, wait: bool = True
    ) -> Assignment | None:
        """The GPUs (or, without GPUs, CPU cores) a run gets next to the ``active_ids`` runs;
        None when its GPUs are taken and ``wait`` (else it shares the least busy ones)."""
        held = [Assignment.load(self.run_dir(run_id)) for run_id in active_ids]
        gpus = self.machine_gpus
        if not gpus:
            taken = {c for a in held for c in a.cpu_cores}
            return Assignment(cpu_cores=core_share(machine_cores(), slots, taken))
        t = config.training
        taken = {g for a in held for g in a.gpu_ids}
        free = [g for g in gpus if g.index not in taken]
        # A run that does not wait takes the least busy GPUs when too few are free.
        candidates = free if wait or len(free) >= t.num_gpus else gpus
        if not t.gpu_list and len(candidates) > t.num_gpus:
            # The ones with the most free memory win: read it now. Without a choice (GPUs named,
            # or just enough or too few free), who holds what decides, and nvidia-smi is not run.
            gpus = self._query_gpus() or gpus
        ids = pick_gpus(gpus, taken, t.num_gpus, t.gpu_list)
        if not ids and not wait:
            ids = t.gpu_list or pick_gpus(gpus, (), t.num_gpus, [])
        return Assignment(gpu_ids=ids) if ids else None

    def _spawn(self, db: Database, run_id: str, config: RunConfig, assignment: Assignment) -> None:
        folder = self.run_dir(run_id)
        cmd = run_command(config, folder, run_id, self.data_dir)
        if config.training.num_machines > 1:  # the Runs view tells what the others run
            note = machines.other_machines_note(config.training, folder, run_id, self.data_dir)
            machines.store_note(db, run_id, note)
        env = {**os.environ, "STUDIO_DATA_DIR": str(self.data_dir), "PYTHONUNBUFFERED": "1"}
        env.update(assignment.env())
        assignment.save(folder)
        env = worker_env(folder, env)
        with open(folder / run_layout.WORKER_LOG, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=Path(__file__).resolve().parents[2],
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

    def resume(self, run_id: str, caps: ActiveRunCaps | None = None) -> None:
        """Queue a stopped, interrupted or failed run to continue from its last checkpoint: at
        the back of the queue, and within ``caps`` as a new run of its owner would be.

        Raises:
            LaunchError: the run cannot resume (its status).
            TooManyActiveRunsError: over one of ``caps``.
        """
        if latest_checkpoint(self.run_dir(run_id)) is None:
            logger.info("Run %s has no checkpoint yet: it restarts from step 0", run_id)
        with self._db() as db:
            try:
                run_store.requeue_run(db, run_id, allowed=RESUMABLE, caps=caps)
            except TooManyActiveRunsError:
                raise
            except ValueError as exc:
                raise LaunchError(str(exc)) from None
        self.dispatch()

    def delete(self, run_id: str) -> None:
        """Remove a run that is not running, with its metrics, samples, logs and files."""
        with self._db() as db:
            run = self._get(db, run_id)
            if run.status == RunStatus.RUNNING and process_alive(run.pid, run.started_at):
                raise LaunchError(f"run {run_id} is running; stop it before deleting it")
            run_store.delete_run(db, run_id)
        shutil.rmtree(self.run_dir(run_id), ignore_errors=True)

    def list(self, *, scan: bool = True) -> list:
        """Every run, after a :meth:`scan` unless the caller has just made one."""
        if scan:
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
            active = run_store.list_runs(db, statuses=ACTIVE)
            logger.debug("Scanning %d running runs for lost workers", len(active))
            for run in active:
                stale = run.heartbeat_at is not None and now - run.heartbeat_at > STALE_HEARTBEAT_S
                alive = process_alive(run.pid, run.started_at)
                if alive and memory_watch.end_if_over(db, run, self.max_worker_bytes):
                    lost.append(run.id)
                    continue
                if stale or not alive:
                    try:
                        run_store.set_status(
                            db,
                            run.id,
                            RunStatus.INTERRUPTED,
                            error="the worker process ended without recording a final status "
                            "(killed, out of memory, or the machine restarted); resume it to "
                            "continue from the last checkpoint",
                        )
                    except run_store.InvalidTransitionError:  # it recorded its end meanwhile
                        continue
                    lost.append(run.id)
        return lost

    @staticmethod
    def _get(db: Database, run_id: str):
        run = run_store.get_run(db, run_id)
        if run is None:
            raise LaunchError(f"no run with id {run_id!r}")
        return run
