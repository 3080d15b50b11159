"""A GGUF model converted once: its dequantised weights and its tokenizer kept as a plain folder.

transformers builds a model and tokenizer from a GGUF file by parsing its metadata in Python and
dequantising every tensor, on every load: SmolLM2-135M-Instruct's 98 MB file took 14.5 s on a
2-core CPU (tokenizer 3.1 s, config 2.4 s, weights 10.4 s), the same model and tokenizer from
a saved folder 0.2 s. So the first load of a file writes what it built into a folder, keyed by
the file's path, size and modification time, transformers' version and the weights' dtype;
each later run, preview and playground of that model reads the folder instead.

The folder lives under ``$STUDIO_GGUF_CACHE``, else ``$XDG_CACHE_HOME/reward-studio/gguf``
(``~/.cache`` by default), like Hugging Face's own cache. It holds the model's public weights
only, so one cache serves every visitor of an app. Where it cannot be written, loads convert
each time as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.models.specs import TORCH_DTYPES

logger = logging.getLogger(__name__)

CACHE_ENV = "STUDIO_GGUF_CACHE"


def cache_root() -> Path:
    """Where converted GGUF models are kept."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base) / "reward-studio" / "gguf"


def converted_folder(name_or_path: str, gguf_file: str, dtype: str) -> Path | None:
    """The folder that holds (or will hold) ``gguf_file`` in ``name_or_path`` converted at
    ``dtype`` (a name in ``TORCH_DTYPES``); None for a file that is not on this machine (a hub
    id: transformers keeps its download)."""
    import transformers

    source = Path(name_or_path) / gguf_file
    try:
        stat = source.stat()
    except OSError:
        return None
    key = "\0".join(
        (str(source.resolve()), str(stat.st_size), str(stat.st_mtime_ns), transformers.__version__)
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_root() / f"{Path(gguf_file).stem}-{digest}" / dtype


def ready(folder: Path | None) -> bool:
    """True when ``folder`` holds a complete conversion (it appears whole, by a rename)."""
    return folder is not None and (folder / "config.json").is_file()


def any_ready(name_or_path: str, gguf_file: str) -> Path | None:
    """A complete conversion of the file at any dtype (its tokenizer is the same in each)."""
    for dtype in TORCH_DTYPES:
        folder = converted_folder(name_or_path, gguf_file, dtype)
        if ready(folder):
            return folder
    return None


def keep(model: Any, folder: Path, write: Callable[[Path], object]) -> None:
    """Write the dequantised ``model`` (its GGUF markers dropped) and its tokenizer into
    ``folder`` with ``write(path)``: into a temporary folder beside it first, renamed into place
    when whole, so a reader never sees half of one and two runs converting at once both
    succeed. Skipped where the disk would keep less than the folder's size free after it; a
    failure (read-only or full disk) is logged. Either way the next load converts again."""
    partial = folder.with_name(f".{folder.name}.{os.getpid()}.partial")
    size = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(folder.parent).free < 2 * size:
            logger.info("Not keeping the converted GGUF model in %s: too little disk", folder)
            return
        write(partial)
        partial.rename(folder)
    except Exception as exc:  # a cache it cannot write must not fail the load
        if not ready(folder):
            logger.warning("Could not keep the converted GGUF model in %s: %s", folder, exc)
    else:
        logger.info("Kept the converted GGUF model in %s", folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
