"""Checkpoint folders: only complete ones are resumed, half-written ones are cleaned up, and a
resume drops exactly the rows the run records again."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.run_config import RunConfig
from engine.run.worker import FINAL_EVAL_METRICS, resume_point
from engine.runtime.checkpoints import (
    STAGING_DIR,
    clean_incomplete,
    is_complete,
    latest_checkpoint,
    load_trained_weights,
    publish,
    rotate_checkpoints,
    staging_dir,
)
from engine.tracking import metric_names
from engine.tracking.recorder import StorageRecorder
from storage import runs as run_store
from storage.paths import db_path
from storage.records import samples as sample_store
from storage.records.metrics import metrics_since
from storage.sqlite.db import Database


def make_checkpoint(run_dir: Path, step: int, *, complete: bool = True) -> Path:
    path = run_dir / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(b"weights")
    if complete:
        (path / "trainer_state.json").write_text("{}", encoding="utf-8")
    return path


def test_a_half_written_checkpoint_is_skipped_for_the_newest_complete_one(tmp_path):
    make_checkpoint(tmp_path, 4)
    make_checkpoint(tmp_path, 6, complete=False)  # killed 7 ms into its save (issue 11, R2)
    (tmp_path / "checkpoint-x").mkdir()
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    assert latest_checkpoint(tmp_path / "missing") is None


def test_cleaning_removes_staging_and_incomplete_folders_only(tmp_path):
    make_checkpoint(tmp_path, 4)
    make_checkpoint(tmp_path, 6, complete=False)
    staged = make_checkpoint(staging_dir(tmp_path), 8)
    removed = clean_incomplete(tmp_path)
    assert sorted(p.name for p in removed) == [STAGING_DIR, "checkpoint-6"]
    assert not staged.exists() and not (tmp_path / "checkpoint-6").exists()
    assert is_complete(tmp_path / "checkpoint-4")


def test_publish_commits_first_then_renames_the_complete_folder_into_place(tmp_path):
    staged = make_checkpoint(staging_dir(tmp_path), 6)
    seen = []
    target = tmp_path / "checkpoint-6"
    published = publish(staged, lambda: seen.append(target.exists()))
    assert seen == [False]  # metrics were committed while the checkpoint was still invisible
    assert published == target and is_complete(target)
    assert not staging_dir(tmp_path).exists()


def test_publish_replaces_a_folder_of_the_same_step_from_an_earlier_attempt(tmp_path):
    make_checkpoint(tmp_path, 6)
    (tmp_path / "checkpoint-6" / "stale").write_text("old attempt", encoding="utf-8")
    publish(make_checkpoint(staging_dir(tmp_path), 6))
    assert not (tmp_path / "checkpoint-6" / "stale").exists()


def test_a_failing_commit_publishes_nothing(tmp_path):
    staged = make_checkpoint(staging_dir(tmp_path), 2)

    def fail() -> None:
        raise RuntimeError("database is locked")

    with pytest.raises(RuntimeError):
        publish(staged, fail)
    assert latest_checkpoint(tmp_path) is None


def test_rotation_keeps_the_newest(tmp_path):
    for step in (2, 10, 9):
        make_checkpoint(tmp_path, step)
    assert [p.name for p in rotate_checkpoints(tmp_path, 2)] == ["checkpoint-2"]
    assert rotate_checkpoints(tmp_path, None) == []


# ---- the rewind on resume (R1): the rows a resumed run records again are dropped first -------
@pytest.fixture
def recorded(data_dir):
    """A run with metrics (and an evaluation at 0) and samples at steps 0-8, and its recorder."""
    db = Database(db_path(data_dir))
    run = run_store.create_run(db, algorithm="grpo", config={})
    recorder = StorageRecorder(db, run.id)
    for step in range(9):
        recorder.metrics(step, {"reward/total": step / 10, FINAL_EVAL_METRICS[0]: 0.5})
        sample_store.add_samples(db, run.id, step, [{"prompt": "p", "completion": "c"}])
    recorder.flush()
    yield db, run.id, recorder, data_dir / "runs" / run.id
    recorder.close()
    db.close()


def stored(db: Database, run_id: str) -> tuple[list[tuple[int, str]], list[int]]:
    rows, _ = metrics_since(db, run_id)
    return sorted((r.step, r.name) for r in rows), sample_store.sample_steps(db, run_id)


def config(steps: int) -> RunConfig:
    return RunConfig.from_dict({"training": {"steps": steps}})


def test_resume_from_a_checkpoint_drops_metrics_and_samples_after_it(recorded):
    db, run_id, recorder, run_dir = recorded
    make_checkpoint(run_dir, 4)
    make_checkpoint(run_dir, 6, complete=False)
    assert resume_point(run_dir, config(20), recorder) == run_dir / "checkpoint-4"
    metrics, sample_steps = stored(db, run_id)
    assert {step for step, _ in metrics} == {0, 1, 2, 3, 4}
    assert (4, FINAL_EVAL_METRICS[0]) in metrics  # before the checkpoint: kept
    assert sample_steps == [0, 1, 2, 3, 4]
    assert run_store.get_run(db, run_id).last_step == 4
    assert not (run_dir / "checkpoint-6").exists()  # the half-written save is gone


def test_resume_without_a_checkpoint_restarts_from_an_empty_history(recorded):
    db, run_id, recorder, run_dir = recorded
    run_dir.mkdir(parents=True)
    assert resume_point(run_dir, config(20), recorder) is None
    assert stored(db, run_id) == ([], [])  # step 0's evaluation is recorded again too
    assert run_store.get_run(db, run_id).last_step == 0


def test_resume_from_the_last_checkpoint_drops_only_its_final_evaluation(recorded):
    db, run_id, recorder, run_dir = recorded
    make_checkpoint(run_dir, 8)
    resume_point(run_dir, config(8), recorder)
    metrics, sample_steps = stored(db, run_id)
    assert (8, "reward/total") in metrics and (8, FINAL_EVAL_METRICS[0]) not in metrics
    assert (7, FINAL_EVAL_METRICS[0]) in metrics
    assert sample_steps == list(range(9))


@pytest.mark.slow
def test_trl_checkpoints_are_staged_and_published_after_the_commit(tmp_path):
    """Real GRPO steps: each checkpoint is complete under .saving when the commit runs, and
    appears only after it."""
    from datasets import Dataset

    from engine.data.datasets import load_rows
    from engine.models.loading import load_model_and_tokenizer
    from engine.trainers.trl.build import build_trl_trainer

    run_config = RunConfig.from_dict(
        {
            "generation": {"num_generations": 4, "max_completion_length": 8},
            "training": {"steps": 4, "prompts_per_step": 2, "save_steps": 2, "eval_samples": 0},
        }
    )
    model, tokenizer = load_model_and_tokenizer(run_config.model)
    commits = []

    def commit() -> None:
        staged = sorted(p.name for p in staging_dir(tmp_path).iterdir())
        done = sorted(p.name for p in tmp_path.glob("checkpoint-*"))
        complete = all(is_complete(staging_dir(tmp_path) / name) for name in staged)
        commits.append((staged, done, complete))

    trainer = build_trl_trainer(
        run_config,
        model,
        tokenizer,
        Dataset.from_list(load_rows(run_config.data)[:8]),
        str(tmp_path),
        [],
        before_checkpoint_publish=commit,
    )
    trainer.train()
    assert commits == [
        (["checkpoint-2"], [], True),
        (["checkpoint-4"], ["checkpoint-2"], True),
    ]
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    assert not staging_dir(tmp_path).exists()


def _tiny_llama(tie: bool):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        tie_word_embeddings=tie,
    )
    return LlamaForCausalLM(config)


@pytest.mark.parametrize("tie", [True, False])
def test_trained_weights_load_back_from_a_full_checkpoint(tmp_path, tie):
    import torch

    trained = _tiny_llama(tie)
    trained.save_pretrained(tmp_path)
    fresh = _tiny_llama(tie)
    with torch.no_grad():
        for p in fresh.parameters():
            p.add_(1.0)
    load_trained_weights(fresh, tmp_path)
    for (name, a), b in zip(trained.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_trained_weights_load_back_from_a_lora_adapter_and_a_wrong_file_is_refused(tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    trained = get_peft_model(_tiny_llama(True), lora)
    trained.save_pretrained(tmp_path)
    fresh = get_peft_model(_tiny_llama(True), LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    load_trained_weights(fresh, tmp_path)
    for (name, a), b in zip(trained.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    (tmp_path / "adapter_model.safetensors").unlink()
    _tiny_llama(True).save_pretrained(tmp_path)  # a full model's file, for a model of one layer
    bigger = _tiny_llama(True)
    bigger.model.layers.append(bigger.model.layers[0].__class__(bigger.config, 1))
    with pytest.raises(ValueError, match=r"missing \['model\.layers\.1\."):
        load_trained_weights(bigger, tmp_path)


def test_the_estimate_a_run_sizes_its_micro_batch_by_outlives_the_fresh_starts_rewind(
    recorded, monkeypatch
):
    """The worker records its estimate and micro-batch as data (bench/first_step.py reads them
    back); a fresh start's rewind drops every earlier row, so they are written after it."""
    from engine.run import worker

    db, run_id, recorder, folder = recorded
    monkeypatch.setattr(worker, "local_card_bytes", lambda: 80 * 2**30)  # as on an 80 GB card
    prepared = worker.prepare(config(2), run_id, folder.parents[1], recorder)
    recorder.flush()
    metrics, _ = stored(db, run_id)
    assert metrics == [(0, metric_names.ESTIMATED_PEAK), (0, metric_names.MICRO_BATCH)]
    rows, _ = metrics_since(db, run_id)
    picked = next(r.value for r in rows if r.name == metric_names.MICRO_BATCH)
    assert picked == prepared.config.per_device_batch_size() > 0
