"""The disk, planned before the first step and kept at the end (issue 42): a run that cannot fit
is refused with the numbers and the fields to change, and a run whose final save meets a full
disk (a fault hook in a real worker subprocess) completes with its last checkpoint kept and a
typed note the Runs view shows."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from transformers import LlamaConfig

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.models.adapters import ADAPTER_CONFIG
from engine.models.char_tokenizer import build_char_tokenizer
from engine.planning.disk import checkpoints_at_peak, plan_disk, size_text
from engine.run import final_model
from engine.run.launcher import Launcher
from engine.run.saved_models import load_run_model
from storage import runs as run_store
from storage.paths import db_path, runs_dir
from storage.records.notes import notes_of_run
from storage.sqlite.db import Database
from storage.sqlite.schema import NoteKind, RunStatus
from tests.tiny_models import save_tiny_llama
from ui.runs.poll import notes_markdown


def test_checkpoints_on_disk_at_once_count_the_one_written_before_the_oldest_goes():
    assert checkpoints_at_peak(steps=300, save_steps=50, keep=2) == 3
    assert checkpoints_at_peak(steps=2, save_steps=1, keep=2) == 2
    assert checkpoints_at_peak(steps=310, save_steps=100, keep=10) == 4  # and one at the end
    assert checkpoints_at_peak(steps=300, save_steps=0, keep=2) == 0


@pytest.fixture
def big_model_dir(tmp_path):
    """A 70B Llama's config alone: the plan reads shapes, never weights."""
    folder = tmp_path / "llama-70b-shape"
    LlamaConfig(
        vocab_size=128256,
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
    ).save_pretrained(folder)
    return folder


def test_a_run_that_cannot_fit_the_disk_is_refused_with_the_numbers(data_dir, big_model_dir):
    config = RunConfig.from_dict(
        {"model": {"name_or_path": str(big_model_dir)}, "training": {"save_steps": 10}}
    )
    plan = plan_disk(config, data_dir)
    assert plan.checkpoints == 3 and plan.checkpoint_bytes > 3 * 70e9 * 2  # weights + 2 moments
    assert not plan.fits
    with pytest.raises(ConfigError) as err:
        Launcher(data_dir).record(config)
    assert err.value.field == "training.save_total_limit"
    message = str(err.value)
    assert f"about {size_text(plan.total_bytes)} (" in message and "GB free" in message
    assert "3 checkpoint(s)" in message
    for field in ("training.save_total_limit", "training.save_steps", "model.lora"):
        assert field in message
    with Database(db_path(data_dir)) as db:
        assert run_store.list_runs(db) == []  # refused before anything was recorded
    # The same model with LoRA writes adapters of a few GB: planned, and it fits.
    lora = {"name_or_path": str(big_model_dir), "lora": {"r": 16}}
    small = plan_disk(
        RunConfig.from_dict({"model": lora, "training": {"save_steps": 10}}), data_dir
    )
    assert small.fits and small.checkpoint_bytes < plan.checkpoint_bytes / 50


def tiny_lora_config(model_dir) -> RunConfig:
    return RunConfig.from_dict(
        {
            "name": "full disk",
            "model": {"name_or_path": str(model_dir), "lora": {"r": 4, "alpha": 8}},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {
                "steps": 2,
                "prompts_per_step": 2,
                "save_steps": 1,
                "eval_samples": 0,
                "samples_per_log": 2,
            },
        }
    )


def test_a_full_disk_at_the_final_save_keeps_the_checkpoint_and_says_so(data_dir, tmp_path):
    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    config_file = tiny_lora_config(model_dir).save(tmp_path / "run.yaml")
    env = {**os.environ, final_model.FAULT_ENV: "final", "STUDIO_DATA_DIR": str(data_dir)}
    result = subprocess.run(
        [sys.executable, "-m", "engine", "train", str(config_file), "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with Database(db_path(data_dir)) as db:
        (run,) = run_store.list_runs(db)
        notes = notes_of_run(db, run.id)
        config = RunConfig.from_dict(run_store.get_run(db, run.id).config)
    assert run.status == RunStatus.COMPLETED
    (note,) = [n for n in notes if n.kind == NoteKind.FINAL_SAVE_FAILED]
    assert note.step == 2
    assert note.detail["kept"] == "checkpoint-2" and note.detail["error"] == (
        "no space left on device"
    )
    assert note.detail["needed_bytes"] > 0 and note.detail["free_bytes"] > 0
    assert note.message.startswith("final save failed: no space left on device, ")
    assert " MB needed, " in note.message and note.message.endswith("; checkpoint-2 kept")
    (shown,) = [line for line in notes_markdown(notes) if "Final model not saved" in line]
    assert "checkpoint\\-2 kept" in shown  # as Markdown escapes it
    run_dir = runs_dir(data_dir) / run.id
    assert not (run_dir / "final").exists()  # nothing half-written is left to load
    assert (run_dir / "checkpoint-2" / ADAPTER_CONFIG).is_file()
    _, _, which = load_run_model(run_dir, "latest", config=config)  # the Playground's pick
    assert which.key == "checkpoint-2"


def test_a_full_disk_with_no_checkpoint_to_keep_fails_the_run_saying_so(
    data_dir, tmp_path, monkeypatch
):
    from tests.in_process_run import run_in_process

    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    config = tiny_lora_config(model_dir)
    config.training.save_steps = 0  # no checkpoints: the final save is all there would be
    monkeypatch.setenv(final_model.FAULT_ENV, "final")
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.FAILED
    with Database(db_path(data_dir)) as db:
        run = run_store.get_run(db, run_id)
    assert "final save failed: no space left on device" in run.error_message
    assert run.error_message.endswith("; no checkpoint to keep")
    assert not (runs_dir(data_dir) / run_id / "final").exists()


def test_a_run_that_takes_most_of_the_free_disk_is_noted_before_its_first_step(
    data_dir, big_model_dir
):
    from engine.run.disk_check import plan_writes
    from engine.tracking.recorder import StorageRecorder

    def with_rank(r: int) -> RunConfig:
        model = {"name_or_path": str(big_model_dir), "lora": {"r": r}}
        return RunConfig.from_dict({"model": model, "training": {"save_steps": 10}})

    # The plan grows linearly with the adapter's rank: pick the rank that takes 90% of the disk.
    one, two = plan_disk(with_rank(1), data_dir), plan_disk(with_rank(2), data_dir)
    per_rank = two.total_bytes - one.total_bytes
    rank = int((0.9 * one.free_bytes - one.total_bytes) / per_rank) + 1
    config = with_rank(rank)
    assert plan_disk(config, data_dir).tight and plan_disk(config, data_dir).fits
    run_id = Launcher(data_dir).record(config)  # it fits: recorded
    with Database(db_path(data_dir)) as db:
        recorder = StorageRecorder(db, run_id)
        plan_writes(config, data_dir, None, recorder)
        recorder.close()
        (note,) = notes_of_run(db, run_id)
    assert note.kind == NoteKind.DISK_SPACE_LOW
    assert note.message.startswith("the run will write about ") and " free" in note.message
    assert 0.8 * note.detail["free_bytes"] < note.detail["needed_bytes"]
