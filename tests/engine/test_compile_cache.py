"""A run's compiled kernels go to its data dir's cache, where the next run finds them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.run.compile_cache import use_compile_cache


def test_points_both_caches_into_the_data_dir(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    folder = use_compile_cache(tmp_path, env)
    assert folder == tmp_path / "compile_cache"
    assert env == {
        "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        "TRITON_CACHE_DIR": str(folder / "triton"),
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
