"""A run's compiled kernels go to its data dir's cache, where the next run finds them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.runtime.compile_cache import skip_cpu_isa_probe, use_compile_cache


def test_points_every_cache_into_the_data_dir(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    folder = use_compile_cache(tmp_path, env)
    assert folder == tmp_path / "compile_cache"
    assert env == {
        "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        "TRITON_CACHE_DIR": str(folder / "triton"),
        "CUDA_CACHE_PATH": str(folder / "cuda"),
    }


def test_an_operators_own_cache_wins(tmp_path: Path) -> None:
    env = {"TORCHINDUCTOR_CACHE_DIR": "/srv/cache"}
    use_compile_cache(tmp_path, env)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "/srv/cache"
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "compile_cache" / "triton")


def test_torch_reads_the_folder_it_is_given(tmp_path: Path) -> None:
    """The variables are the ones this torch reads: its Inductor cache and the cache its
    Triton kernels are written to resolve to the data dir's folder."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("CACHE_DIR")}
    folder = use_compile_cache(tmp_path, env)
    code = (
        "from torch._inductor.runtime.cache_dir_utils import cache_dir, triton_cache_dir\n"
        "print(cache_dir()); print(triton_cache_dir(0))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [str(folder / "inductor"), str(folder / "triton")]


def test_the_first_step_logs_what_compiling_took(monkeypatch, caplog) -> None:
    import torch

    from engine.runtime import compile_cache

    torch.compile(lambda x: torch.cos(x) + 1)(torch.randn(3))
    monkeypatch.setattr(compile_cache, "_reported", False)
    with caplog.at_level("INFO", logger="engine.runtime.compile_cache"):
        compile_cache.log_compile_time()
        compile_cache.log_compile_time()  # once per process
    said = [r.getMessage() for r in caplog.records if r.name == "engine.runtime.compile_cache"]
    assert len(said) == 1 and said[0].startswith("Compiling took ")
    assert "FX graph cache" in said[0]


def test_inductor_skips_the_cpu_isa_probe(tmp_path: Path) -> None:
    """After the call Inductor picks no vector ISA without building a probe library; an
    operator's own setting is left alone."""
    code = (
        "from engine.runtime.compile_cache import skip_cpu_isa_probe\n"
        "skip_cpu_isa_probe()\n"
        "from torch._inductor import cpu_vec_isa\n"
        "print(bool(cpu_vec_isa.pick_vec_isa()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_VEC_ISA_OK"}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False"]
    assert not list(tmp_path.rglob("*.so"))  # no probe library was built
    own = {"TORCHINDUCTOR_VEC_ISA_OK": "1"}
    skip_cpu_isa_probe(own)
    assert own == {"TORCHINDUCTOR_VEC_ISA_OK": "1"}
