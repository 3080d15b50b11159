"""After the first step the run's long-lived objects are out of the garbage collector's walks."""

from __future__ import annotations

import gc

import pytest

from engine.runtime import heap


def test_freezes_once_and_later_collections_skip_the_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "_frozen", False)
    kept = [[i] for i in range(10_000)]  # long-lived objects the collector tracks
    try:
        heap.freeze_long_lived()
        frozen = gc.get_freeze_count()
        assert frozen >= len(kept)
        later = [[i] for i in range(1_000)]
        heap.freeze_long_lived()  # once per process: what later steps make stays collectable
        assert gc.get_freeze_count() == frozen and later
    finally:
        gc.unfreeze()
