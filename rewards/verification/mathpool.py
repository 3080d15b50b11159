"""Supervised worker processes that run math-verify with a hard deadline.

math-verify can spend unbounded time on short inputs (``$10^{10^{10}}$`` makes sympy build a
ten-billion-digit integer), and its own timeouts rely on ``signal.alarm``, which works only in
the main thread and cannot interrupt a long C-level computation. So the slow path runs in
worker processes (``python -m rewards.verification.math_worker``, started without a shell, no
``multiprocessing`` re-import of the caller's ``__main__``). A request that gets no answer within
``timeout_s`` has its worker killed and restarted; the request counts as "not verifiable".
Workers also split a batch between them, which is where the throughput on two cores comes from.

A whole call can be bounded too: inside ``rewards.verification.deadline.call_deadline(seconds)``
(the web app's scoring), ``check_many`` returns by then, and requests still unanswered count as "not
verifiable" (their workers are restarted). Without it, only each request is bounded, which a
batch of slow answers multiplies (20 of ``$10^{10^{N}}$`` held the pool for 72 s).

Set ``REWARDS_MATH_WORKERS=0`` to run math-verify in-process instead (no deadline: only for
trusted input); the default is :func:`default_workers`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import selectors
import subprocess
import sys
import threading
import time
from collections import deque

from rewards.verification.deadline import deadline_at
from rewards.verification.mathcheck import CheckResult, check, first_integer_candidate

logger = logging.getLogger(__name__)

#: Seconds one request may take before its worker is killed.
DEFAULT_TIMEOUT_S = 5.0
#: Seconds one interactive scoring call (a preview, the API) may spend in math-verify.
INTERACTIVE_DEADLINE_S = 10.0
#: Seconds a fresh worker may take to import math-verify.
STARTUP_TIMEOUT_S = 120.0


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rewards.verification.math_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            # Out of the caller's process group: a run's stop (SIGTERM to its group) or Ctrl-C
            # must let the step finish its rewards. The worker exits at its stdin's EOF.
            start_new_session=True,
        )
        self.buffer = b""
        self.ready = False
        self.queue: deque[tuple[int, str, str]] = deque()  # sent, not yet answered
        self.deadline = time.monotonic() + STARTUP_TIMEOUT_S

    def fileno(self) -> int:
        return self.proc.stdout.fileno()

    def send(self, items: list[tuple[int, str, str]], timeout_s: float) -> None:
        payload = "".join(json.dumps(list(item)) + "\n" for item in items).encode()
        self.queue.extend(items)
        if self.ready:
            self.deadline = time.monotonic() + timeout_s
        self.proc.stdin.write(payload)
        self.proc.stdin.flush()

    def read_lines(self) -> list[list]:
        chunk = os.read(self.fileno(), 1 << 16)
        if not chunk:
            raise EOFError
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class MathPool:
    """A small pool of math-verify workers; :meth:`check_many` is thread-safe (calls serialise)."""

    def __init__(self, workers: int = 2, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.size = max(1, workers)
        self.timeout_s = timeout_s
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the workers now (they import math-verify in the background; returns at once)."""
        with self._lock:
            while len(self._workers) < self.size:
                self._workers.append(_Worker())

    def close(self) -> None:
        """Stop the workers (they are restarted on the next call)."""
        with self._lock:
            for worker in self._workers:
                worker.kill()
            self._workers = []

    def check_many(self, pairs: list[tuple[str, str]]) -> list[CheckResult]:
        """math-verify's verdict on each ``(gold, pred)`` pair, in order."""
        if not pairs:
            return []
        deadline = deadline_at()
        if deadline is None:
            with self._lock:
                return self._run(pairs)
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return [_TIMED_OUT] * len(pairs)  # other calls held the pool all along
        try:
            return self._run(pairs, deadline)
        finally:
            self._lock.release()

    def _run(
        self, pairs: list[tuple[str, str]], call_deadline: float | None = None
    ) -> list[CheckResult]:
        while len(self._workers) < self.size:
            self._workers.append(_Worker())
        results: dict[int, CheckResult] = {}
        pending = deque((i, g, p) for i, (g, p) in enumerate(pairs))
        chunk = max(1, min(64, len(pairs) // (4 * self.size) or 1))
        selector = selectors.DefaultSelector()
        for worker in self._workers:
            selector.register(worker.proc.stdout, selectors.EVENT_READ, worker)
        try:
            while len(results) < len(pairs):
                if call_deadline is not None and time.monotonic() >= call_deadline:
                    self._abandon(selector, pending, results, len(pairs))
                    break
                for worker in self._workers:
                    if worker.ready and len(worker.queue) < chunk and pending:
                        batch = [pending.popleft() for _ in range(min(chunk, len(pending)))]
                        worker.send(batch, self.timeout_s)
                now = time.monotonic()
                wake = min(w.deadline for w in self._workers)
                if call_deadline is not None:
                    wake = min(wake, call_deadline)
                wait = max(0.0, wake - now)
                for key, _ in selector.select(timeout=wait):
                    worker = key.data
                    try:
                        lines = worker.read_lines()
                    except (EOFError, OSError, ValueError):
                        self._replace(worker, selector, pending, results, crashed=True)
                        continue
                    for msg in lines:
                        if msg == ["ready"]:
                            worker.ready = True
                            worker.deadline = time.monotonic() + self.timeout_s
                            continue
                        rid, gold_ok, shown, equal = msg
                        if worker.queue and worker.queue[0][0] == rid:
                            worker.queue.popleft()
                        results[rid] = CheckResult(bool(gold_ok), shown, bool(equal))
                        worker.deadline = time.monotonic() + self.timeout_s
                now = time.monotonic()
                for worker in list(self._workers):
                    idle = worker.ready and not worker.queue
                    if not idle and now > worker.deadline:
                        self._replace(worker, selector, pending, results, crashed=False)
                    elif idle:
                        worker.deadline = now + self.timeout_s
        finally:
            selector.close()
        return [results[i] for i in range(len(pairs))]

    def _abandon(self, selector, pending, results, total: int) -> None:
        """The call's deadline passed: restart busy workers, the rest count as timed out."""
        for worker in list(self._workers):
            if worker.queue:  # only a ready worker is sent requests
                selector.unregister(worker.proc.stdout)
                worker.kill()
                self._workers[self._workers.index(worker)] = _Worker()
        logger.warning(
            "math-verify call deadline passed; %d of %d checks not verified",
            total - len(results),
            total,
        )
        pending.clear()
        for i in range(total):
            results.setdefault(i, _TIMED_OUT)

    def _replace(self, worker, selector, pending, results, crashed: bool) -> None:
        """Kill ``worker``; its current request fails, the rest of its queue is re-sent."""
        selector.unregister(worker.proc.stdout)
        worker.kill()
        if worker.queue:
            rid, gold, pred = worker.queue.popleft()
            if worker.ready:
                logger.warning(
                    "math-verify %s on %r vs gold %r; not verified",
                    "crashed" if crashed else f"exceeded {self.timeout_s:g}s",
                    pred[:80],
                    gold[:80],
                )
                results[rid] = _TIMED_OUT
            else:
                worker.queue.appendleft((rid, gold, pred))
            pending.extendleft(reversed(worker.queue))
        if not worker.ready:
            raise RuntimeError(
                "math-verify worker failed to start (python -m rewards.verification.math_worker)"
            )
        fresh = _Worker()
        self._workers[self._workers.index(worker)] = fresh
        selector.register(fresh.proc.stdout, selectors.EVENT_READ, fresh)


_TIMED_OUT = CheckResult(True, None, False, timed_out=True)


class InProcessChecker:
    """The same checks without a worker: no deadline, for trusted input only."""

    def start(self) -> None:
        pass

    def check_many(self, pairs: list[tuple[str, str]]) -> list[CheckResult]:
        return [check(g, p) for g, p in pairs]

    def close(self) -> None:
        pass


_POOL: MathPool | InProcessChecker | None = None
_POOL_LOCK = threading.Lock()


def default_workers(cores: int | None = None) -> int:
    """Half the cores this process may run on, at least two (one on one core), at most eight.

    A training step scores hundreds of completions at once while the GPU waits; two workers on
    a 16-core GPU host left 0.12-0.17 s of each 1.6 s step to math-verify (bench/RESULTS.md).
    """
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        cores = cores or os.cpu_count() or 1
    return min(cores, max(2, cores // 2), 8)


def get_checker() -> MathPool | InProcessChecker:
    """The process-wide checker, created on first use (see the module docstring)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            workers = int(os.environ.get("REWARDS_MATH_WORKERS", default_workers()))
            _POOL = MathPool(workers) if workers > 0 else InProcessChecker()
            atexit.register(_POOL.close)
        return _POOL


def warm_up() -> None:
    """Start the math-verify workers ahead of the first request (e.g. when an app starts), and
    load math-verify's answer patterns here, where integer answers are decided without the
    workers: that first load imports math-verify and sympy (0.13 s on an H200's host, 0.5 s on
    2 cores), which SmolLM2's second training step waited for (0.146 s of scoring, against
    0.008 s later)."""
    get_checker().start()
    first_integer_candidate("1")
