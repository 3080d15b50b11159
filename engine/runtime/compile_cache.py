"""Compiled kernels kept in the data dir, so a second run of a shape starts without compiling.

torch.compile's Inductor writes each compiled graph to its FX graph and AOTAutograd caches, and
Triton writes each kernel binary to its own cache, keyed by the graph, the inputs' shapes and
the library versions (PyTorch's "Compile Time Caching in torch.compile" tutorial). The CUDA
driver keeps the kernels it compiles at run time from PTX in its own JIT cache (CUDA C
Programming Guide, "Just-in-Time Compilation": ``CUDA_CACHE_PATH``, default
``~/.nv/ComputeCache``). All three default to folders that a container restart or a Space's
rebuild empties; a run's worker points them at ``<data dir>/compile_cache`` instead, beside the
runs that made them. Every run of the data dir shares it: the caches write each entry
atomically, so concurrent runs are safe. An operator's own ``TORCHINDUCTOR_CACHE_DIR`` /
``TRITON_CACHE_DIR`` / ``CUDA_CACHE_PATH`` win.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from pathlib import Path

logger = logging.getLogger(__name__)

COMPILE_CACHE_DIR = "compile_cache"


def use_compile_cache(
    data_dir: str | os.PathLike[str], env: MutableMapping[str, str] | None = None
) -> Path:
    """Point Inductor's, Triton's and the CUDA driver's caches at ``data_dir``'s compile cache
    in ``env`` (this process's environment by default) unless already set; returns the folder.
    Call before the first compile and before CUDA starts: the libraries read the variables when
    they first write, the driver when it starts."""
    env = os.environ if env is None else env
    folder = Path(data_dir) / COMPILE_CACHE_DIR
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(folder / "inductor"))
    env.setdefault("TRITON_CACHE_DIR", str(folder / "triton"))
    env.setdefault("CUDA_CACHE_PATH", str(folder / "cuda"))
    return folder


VEC_ISA_ENV = "TORCHINDUCTOR_VEC_ISA_OK"


def skip_cpu_isa_probe(env: MutableMapping[str, str] | None = None) -> None:
    """Tell Inductor the CPU has no vector ISA to probe for, unless ``env`` (this process's
    environment by default) already says.

    Before its first C++ kernel Inductor checks each vector ISA the CPU lists by building a test
    library and loading it in a child Python (``torch/_inductor/cpu_vec_isa.py``,
    ``VecISA.check_build``), once per process. On a 2 x H200 host (torch 2.11) those checks took
    39-47 s of every run's first step, warm cache or cold, 0.5B shape or 7B (bench/RESULTS.md).
    The runs here compile only CUDA graphs (decoder layers and the decode step); a CPU kernel
    that turns up in one is a scalar index or two, which plain C++ loops compute as well."""
    env = os.environ if env is None else env
    if VEC_ISA_ENV in env:
        return
    env[VEC_ISA_ENV] = "0"  # compile workers this process starts read it from here
    from torch._inductor import config

    config.cpp.vec_isa_ok = False  # the config read the variable when torch was imported


_reported = False


def log_compile_time() -> None:
    """Once per process, after its first step: how long torch.compile took in it so far and
    what the caches served (a warm cache that still leaves a slow first step shows here)."""
    global _reported
    if _reported:
        return
    _reported = True
    from torch._dynamo import utils

    metrics = utils.compilation_time_metrics
    compiles = metrics.get("_compile.compile_inner", [])
    if not compiles:
        return
    counters = utils.counters
    logger.info(
        "Compiling took %.1f s over %d graphs, the slowest %.1f s (tracing %.1f s, backend "
        "%.1f s; FX graph cache %d hits, %d misses; AOTAutograd cache %d hits, %d misses)",
        sum(compiles),
        len(compiles),
        max(compiles),
        sum(metrics.get("bytecode_tracing", [])),
        sum(metrics.get("OutputGraph.call_user_compiler", [])),
        counters["inductor"]["fxgraph_cache_hit"],
        counters["inductor"]["fxgraph_cache_miss"],
        counters["aot_autograd"]["autograd_cache_hit"],
        counters["aot_autograd"]["autograd_cache_miss"],
    )
