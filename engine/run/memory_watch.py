"""A memory cap on the workers of a public app, enforced from outside by the launcher.

The launcher's supervision (every few seconds) sums the resident memory of each running
worker's process tree (psutil); a run over the cap is killed and marked failed with a message
that says what it used and what to change. RSS is measured rather than capped with
``RLIMIT_AS``, since CUDA and PyTorch reserve far more address space than they touch, and an
address-space limit would fail GPU runs that fit. Between two rounds a worker can grow past the
cap, so the cap should leave the machine that much headroom.
"""

from __future__ import annotations

import logging
import os
import signal
import time

import psutil

from storage import runs as run_store
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

logger = logging.getLogger(__name__)

MAX_WORKER_MB_ENV = "STUDIO_DEMO_MAX_WORKER_MB"


def tree_rss(pid: int) -> int:
    """Resident bytes of process ``pid`` and all its descendants (0 once it is gone)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def over_cap_message(used: int, cap: int) -> str:
    return (
        f"the run used {used / 2**20:,.0f} MiB of memory, over this app's limit of "
        f"{cap / 2**20:,.0f} MiB per run ({MAX_WORKER_MB_ENV}), and was stopped; use a smaller "
        "model, fewer prompts per step or generations, shorter completions, or a smaller file"
    )


def kill_tree(pid: int) -> None:
    """End the worker's process group (it leads its own session) at once."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        logger.warning("Could not kill the process group of %d", pid)


def end_if_over(db: Database, run: run_store.RunInfo, cap: int | None) -> bool:
    """End ``run`` (running, its worker alive) when its worker holds more than ``cap`` bytes:
    kill it and mark it failed with :func:`over_cap_message`. True when it was ended."""
    if cap is None or not run.pid:
        return False
    used = tree_rss(run.pid)
    if used <= cap:
        return False
    kill_tree(run.pid)
    message = over_cap_message(used, cap)
    logger.warning("Run %s: %s", run.id, message)
    try:
        run_store.set_status(db, run.id, RunStatus.FAILED, error=message, ended_at=time.time())
    except run_store.InvalidTransitionError:  # it recorded its end meanwhile
        return False
    return True
