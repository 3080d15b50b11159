"""Shared fixtures: every test writes only under a temporary data dir and runs offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

# No test may reach a hub: the project ships its own model and task.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread per test process and per run it starts: pytest-xdist runs two workers on this
# 2-core machine (pyproject's addopts), and torch's default (a thread per core in every
# process) oversubscribed the cores, where OpenMP's waiting threads spin: the suite stalled.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# GGUF models converted on their first load (engine/models/gguf_cache.py) are kept for this
# test process alone, not in the user's cache, and removed at its end.
_GGUF_CACHE = None
if "STUDIO_GGUF_CACHE" not in os.environ:
    _GGUF_CACHE = os.environ["STUDIO_GGUF_CACHE"] = tempfile.mkdtemp(prefix="studio-gguf-")


def pytest_sessionfinish(session, exitstatus):
    if _GGUF_CACHE is not None:
        shutil.rmtree(_GGUF_CACHE, ignore_errors=True)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A fresh Reward Studio data dir, also exported to worker subprocesses."""
    path = tmp_path / "studio-data"
    path.mkdir()
    monkeypatch.setenv("STUDIO_DATA_DIR", str(path))
    return path


@pytest.fixture
def engine_cli():
    """``engine_cli(*args, env=None)``: ``python -m engine ARGS`` run to its end (text output)."""

    def run(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "engine", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    return run
