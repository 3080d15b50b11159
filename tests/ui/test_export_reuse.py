"""Bounded disk per request: asking for the same model export again returns the archive built
the first time (while its download folder is kept) instead of writing another whole model."""

from __future__ import annotations

import pytest

from engine.config import RunConfig
from engine.tokenizer import build_char_tokenizer
from storage.schema import RunStatus
from tests.in_process_run import run_in_process
from tests.tiny_models import save_tiny_llama
from ui.context import AppContext
from ui.identity import LOCAL_VIEWER
from ui.model_export import model_export_archive


@pytest.fixture
def one_step_run(tmp_path):
    """A tiny Llama trained one step (final/), owned by the local viewer."""
    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    config = RunConfig.from_dict(
        {
            "model": {"name_or_path": str(model_dir)},
            "generation": {"num_generations": 2, "max_completion_length": 4},
            "training": {"steps": 1, "prompts_per_step": 2, "eval_samples": 0},
        }
    )
    run_id, status = run_in_process(tmp_path / "data", config)
    assert status == RunStatus.COMPLETED
    ctx = AppContext(tmp_path / "data")
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
