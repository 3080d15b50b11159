"""Prompt datasets from the Hugging Face Hub, through the ``datasets`` library."""

from __future__ import annotations

import os
from typing import Any

from engine.data.files import DatasetError


def hub_offline() -> bool:
    """True when datasets may not download (HF_DATASETS_OFFLINE or HF_HUB_OFFLINE)."""
    flags = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")
    return any(os.environ.get(f, "").lower() in ("1", "true", "yes", "on") for f in flags)


def read_hub(path: str, config_name: str | None, split: str) -> list[dict[str, Any]]:
    """The rows of a hub dataset's split (``train`` for the splits cut from it: ``heldout``,
    ``all``); a :class:`DatasetError` on ``path`` when it cannot be loaded."""
    import datasets

    try:
        hub_split = "train" if split in ("train", "heldout", "all") else split
        data = datasets.load_dataset(str(path), config_name, split=hub_split)
    except Exception as exc:  # datasets raises many types for missing/unreachable data
        if hub_offline():
            raise DatasetError(
                f"dataset {path!r} is not in the local cache and network access is off "
                "(HF_DATASETS_OFFLINE/HF_HUB_OFFLINE). To fix: set HF_HUB_OFFLINE=0 and "
                "HF_DATASETS_OFFLINE=0 on a machine with network access, or download the "
                "data as a JSONL/CSV/Parquet file and use source 'file'.",
                "path",
            ) from exc
        raise DatasetError(f"dataset {path!r} could not be loaded: {exc}", "path") from exc
    return [dict(r) for r in data]
