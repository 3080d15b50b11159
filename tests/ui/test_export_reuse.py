"""Bounded disk per request: asking for the same model export again returns the archive built
the first time (while its download folder is kept) instead of writing another whole model."""

from __future__ import annotations

import pytest

from ui.access.identity import LOCAL_VIEWER
from ui.runs.model_export import model_export_archive
from ui.shared.context import AppContext


@pytest.fixture
def one_step_run(tiny_run):
    """The session's tiny trained run (tests/ui/conftest.py), owned by the local viewer."""
    data_dir, run_id = tiny_run
    ctx = AppContext(data_dir)
    yield ctx, run_id
    ctx.close()


def test_the_same_export_asked_again_reuses_its_archive(one_step_run):
    ctx, run_id = one_step_run
    first, _ = model_export_archive(ctx.db, LOCAL_VIEWER, run_id, "hf")
    built = first.stat().st_mtime_ns
    again, _ = model_export_archive(ctx.db, LOCAL_VIEWER, run_id, "hf", quant="Q8_0")
    assert again == first and again.stat().st_mtime_ns == built  # quant: GGUF only
    merged, _ = model_export_archive(ctx.db, LOCAL_VIEWER, run_id, "merged")
    assert merged != first and merged.is_file()
