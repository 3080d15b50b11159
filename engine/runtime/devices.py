"""Which GPUs and CPU cores each run gets, so several runs share one machine.

A worker sees only its own GPUs: the launcher sets ``CUDA_VISIBLE_DEVICES`` (with
``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so the numbers are nvidia-smi's) to the GPUs the run names in
``training.gpu_ids``, else to the free GPUs with the most free memory. A one-GPU run therefore
never sees several GPUs (TRL refuses ``nn.DataParallel``), and a run whose GPUs are all taken by
other runs waits ``queued``.

On CPU, each of ``max_concurrent`` run slots owns an equal, disjoint share of the cores: the
worker pins itself to them (``sched_setaffinity``) and sizes torch's thread pool to them
(``OMP_NUM_THREADS`` and ``STUDIO_CPU_CORES``), so two runs never fight over the same cores with
twice as many threads as there are. The web process's preview takes the cores no run holds.

What a run got is written to ``devices.json`` in its folder; the launcher reads it back to know
what is taken.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engine.runtime.layout import DEVICES_FILE

logger = logging.getLogger(__name__)

CORES_ENV = "STUDIO_CPU_CORES"
THREAD_ENVS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class Gpu:
    """One GPU as nvidia-smi reports it (``index`` in PCI bus order)."""

    index: int
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class Assignment:
    """The devices one run holds: GPU indices (empty on CPU) and CPU cores (empty: all)."""

    gpu_ids: list[int] = field(default_factory=list)
    cpu_cores: list[int] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """What the worker's environment needs for this assignment."""
        env: dict[str, str] = {}
        if self.gpu_ids:
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, self.gpu_ids))
        if self.cpu_cores:
            env[CORES_ENV] = ",".join(map(str, self.cpu_cores))
            for name in THREAD_ENVS:
                env[name] = str(len(self.cpu_cores))
        return env

    def save(self, run_dir: Path) -> None:
        (run_dir / DEVICES_FILE).write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def load(cls, run_dir: Path) -> Assignment:
        """What ``run_dir``'s run holds; nothing when the file is missing or unreadable."""
        try:
            data = json.loads((run_dir / DEVICES_FILE).read_text(encoding="utf-8"))
            return cls([int(i) for i in data["gpu_ids"]], [int(c) for c in data["cpu_cores"]])
        except (OSError, ValueError, KeyError, TypeError):
            return cls()


# ---- GPUs ------------------------------------------------------------------------------------
def parse_nvidia_smi(text: str) -> list[Gpu]:
    """GPUs from ``nvidia-smi --query-gpu=index,memory.free,memory.total
    --format=csv,noheader,nounits`` (MiB)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and all(p.isdigit() for p in parts):
            index, free, total = map(int, parts)
            gpus.append(Gpu(index, free * 2**20, total * 2**20))
    return gpus


def list_gpus() -> list[Gpu]:
    """This machine's GPUs with their free memory, limited to ``CUDA_VISIBLE_DEVICES`` when the
    studio itself was given a subset; [] without nvidia-smi (no NVIDIA GPU)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,memory.free,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("nvidia-smi failed (%s); GPUs are not assigned per run", exc)
        return []
    gpus = parse_nvidia_smi(out)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and all(v.strip().isdigit() for v in visible.split(",") if v.strip()):
        allowed = {int(v) for v in visible.split(",") if v.strip()}
        gpus = [g for g in gpus if g.index in allowed]
    return gpus


def pick_gpus(gpus: list[Gpu], taken: Iterable[int], count: int, wanted: list[int]) -> list[int]:
    """The GPUs a run gets: ``wanted`` if all are free, else none; without ``wanted``, the
    ``count`` free GPUs with the most free memory, else none (the run waits)."""
    taken = set(taken)
    free = [g for g in gpus if g.index not in taken]
    if wanted:
        known = {g.index for g in free}
        return list(wanted) if set(wanted) <= known else []
    if len(free) < count:
        return []
    free.sort(key=lambda g: (-g.free_bytes, g.index))
    return sorted(g.index for g in free[:count])


# ---- CPU cores -------------------------------------------------------------------------------
def machine_cores() -> list[int]:
    """The cores this process may run on (the container's share where it is limited)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def core_share(cores: list[int], slots: int, taken: Iterable[int]) -> list[int]:
    """One slot's cores: the first free block of ``len(cores) // slots`` cores (at least one).
    A single slot, or a machine with fewer cores than slots, gets no pinning ([] = all)."""
    size = len(cores) // max(1, slots)
    if slots <= 1 or size < 1:
        return []
    taken = set(taken)
    for start in range(0, size * slots, size):
        block = cores[start : start + size]
        if not taken & set(block):
            return block
    return []


def apply_cpu_share(env: dict[str, str] | None = None) -> list[int]:
    """In the worker, at start: pin the process to ``STUDIO_CPU_CORES`` and size torch's
    thread pool to them. Returns the cores (empty: no share was set)."""
    env = os.environ if env is None else env
    text = env.get(CORES_ENV, "")
    try:
        cores = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        logger.warning("ignoring %s=%r (not a list of core numbers)", CORES_ENV, text)
        return []
    if not cores:
        return []
    import torch

    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, cores)
        except OSError as exc:  # cores outside the container's set: threads alone still help
            logger.warning("could not pin to cores %s: %s", cores, exc)
    torch.set_num_threads(len(cores))
    logger.info("CPU share: %d threads on cores %s", len(cores), cores)
    return cores


@contextlib.contextmanager
def bounded_threads(count: int) -> Iterator[None]:
    """Run the block with at most ``count`` torch threads in this thread (the preview's share,
    so it does not starve a training worker), then restore the previous count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(count, before)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def preview_threads(running_workers: int, slots: int) -> int:
    """Threads the web process may use for a preview while ``running_workers`` train: the
    cores of the slots no worker holds, at least one."""
    cores = len(machine_cores())
    if running_workers <= 0:
        return cores
    per_slot = max(1, cores // max(1, slots))
    return max(1, cores - running_workers * per_slot)
