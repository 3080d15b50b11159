"""Models kept loaded between interactive requests: the Preview's one model, the Playground's
two sides of a run."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.run.saved_models import load_run_model

#: Run models kept loaded (the Playground's two sides).
KEEP_LOADED = 2


class LoadedRunModels:
    """The run models loaded so far, the newest :data:`KEEP_LOADED` kept; a model folder that
    changed since it was loaded (a checkpoint rewritten, the final model saved) loads again."""

    def __init__(self, keep: int = KEEP_LOADED) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._models: dict[tuple, tuple[Any, Any]] = {}

    def get(self, run_dir: Path, key: str, config: RunConfig) -> tuple[Any, Any]:
        """``(model, tokenizer)`` of the run's model ``key`` (``base``, ``final``,
        ``checkpoint-N``); raises what :func:`load_run_model` raises."""
        folder = run_dir / key
        stamp = folder.stat().st_mtime_ns if folder.exists() else 0
        cache_key = (str(run_dir), key, stamp)
        with self._lock:
            if cache_key not in self._models:
                model, tokenizer, _ = load_run_model(run_dir, key, config=config)
                while len(self._models) >= self._keep:
                    self._models.pop(next(iter(self._models)))
                self._models[cache_key] = (model, tokenizer)
            return self._models[cache_key]


class LatestModel:
    """The ``(model, tokenizer)`` of the last model asked for, by key (``repr`` of its spec),
    kept until another is asked for: a preview of a large model must not keep the previous
    one in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: str | None = None
        self._loaded: tuple[Any, Any] | None = None

    def get(self, key: str, load: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
        """The model of ``key``, from ``load()`` when it is not the one kept (the previous one
        is released first; one load at a time)."""
        with self._lock:
            if self._key != key or self._loaded is None:
                self._key, self._loaded = None, None
                self._loaded = load()
                self._key = key
            return self._loaded

    def kept(self, key: str) -> tuple[Any, Any] | None:
        """The model of ``key`` when it is the one kept, else None (nothing is loaded)."""
        with self._lock:
            return self._loaded if self._key == key else None
