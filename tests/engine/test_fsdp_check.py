"""bench/fsdp_check.py on the CPU: its arguments, the runs it configures, the estimate's verdict
on the 8.5B shape, and a dry run that builds a tiny model and writes the launch files."""

from __future__ import annotations

import json

import pytest
from transformers import Qwen2Config

from bench import fsdp_check
from engine.config.run_config import RunConfig
from engine.planning.micro_batch import describe

CARD = int(79.2 * 1024**3)  # an H100 as torch reports it


def test_arguments_are_checked_by_name(capsys):
    args = fsdp_check.parse_args([])
    assert (args.model_shape, args.steps, args.prompts, args.generations, args.tokens) == (
        "large",
        3,
        8,
        4,
        64,
    )
    for bad, message in (
        (["--gpus", "1"], "--gpus: FSDP shards over 2 or more GPUs"),
        (["--generations", "1"], "--generations: GRPO needs at least 2"),
        (["--steps", "0"], "--steps: must be >= 1"),
        (["--model-shape", "huge"], "invalid choice"),
    ):
        with pytest.raises(SystemExit):
            fsdp_check.parse_args(bad)
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("strategy", ["fsdp", "ddp"])
def test_the_run_is_a_full_fine_tune_on_two_gpus_that_records_once(tmp_path, strategy):
    args = fsdp_check.parse_args(["--model-shape", "small"])
    config = fsdp_check.run_config(args, tmp_path / "model", tmp_path / "p.jsonl", strategy)
    again = RunConfig.from_dict(config.to_dict())  # what the saved file reloads as
    assert again.algorithm == "grpo" and again.model.lora is None
    t = again.training
    assert (t.num_gpus, t.distributed, t.steps, t.prompts_per_step) == (2, strategy, 3, 8)
    assert (t.eval_samples, t.save_steps) == (0, 0)  # a few steps: no evaluation, no checkpoints
    assert t.samples_per_log == fsdp_check.SAMPLES_PER_LOG
    assert (again.generation.num_generations, again.generation.max_completion_length) == (4, 64)


def test_the_large_shape_needs_fsdp_by_the_estimate(tmp_path):
    """The 8.5B shape's full fine-tune does not fit a whole 80 GB card under DDP, one completion
    at a time; sharded over two it fits the card (measured: 67.9 GiB), if not the 80% the
    estimate fills, and the estimate's line says so (the config alone is read)."""
    Qwen2Config(**fsdp_check.QWEN_7B).save_pretrained(tmp_path)
    args = fsdp_check.parse_args([])
    ddp = fsdp_check.verdict(fsdp_check.run_config(args, tmp_path, tmp_path, "ddp"), CARD)
    fsdp = fsdp_check.verdict(fsdp_check.run_config(args, tmp_path, tmp_path, "fsdp"), CARD)
    assert not ddp["fits"] and ddp["estimate_gib_micro_batch_1"] > CARD / 1024**3
    assert fsdp["estimate_gib_micro_batch_1"] < CARD / 1024**3
    assert not fsdp["fits"] and fsdp["micro_batch"] == 1
    line = describe(fsdp_check.run_config(args, tmp_path, tmp_path, "fsdp"), CARD)
    assert "That is above 80% of the 79.2 GiB card: the run may run out of memory" in line


def test_a_dry_run_builds_a_tiny_model_and_writes_the_launch_files(tmp_path, capsys):
    report = fsdp_check.main(["--model-shape", "tiny", "--dry-run", "--work-dir", str(tmp_path)])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == report
    assert report["parameters"] > 0
    assert (tmp_path / "qwen2-tiny" / "model.safetensors").exists()
    assert (tmp_path / "qwen2-tiny" / "tokenizer.json").exists()
    fsdp = report["launch_fsdp"]
    assert "--config_file" in fsdp["command"] and "accelerate.commands.launch" in fsdp["command"]
    assert "fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer" in fsdp["fsdp_config"]
    assert "num_processes: 2" in fsdp["fsdp_config"]
    assert report["launch_ddp"]["fsdp_config"] is None
    assert report["verdict_ddp"]["fits"] and report["verdict_fsdp"]["fits"]
    assert report["verdict_ddp_80gib"]["budget_gib"] == 64.0  # 80% of 80 GiB


def test_read_back_counts_rows_written_twice(tmp_path):
    """The check's SQLite reading flags a metric that two processes wrote."""
    from engine.tracking import metric_names
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.records.metrics import MetricWriter
    from storage.sqlite.db import Database

    with Database(db_path(tmp_path)) as db:
        run_store.create_run(db, run_id="r1", algorithm="grpo", config={})
        with MetricWriter(db, "r1") as writer:
            for step in (1, 2, 3):
                writer.log(step, {metric_names.REWARD_TOTAL: 0.5}, at=10.0 * step)
    back = fsdp_check.read_back(tmp_path)
    assert back["duplicate_metric_rows"] == 0 and back["steps_recorded"] == 3
    assert back["s_per_step"] == 10.0
    assert not back["written_once"]  # no samples at all
    with Database(db_path(tmp_path)) as db, MetricWriter(db, "r1") as writer:
        writer.log(2, {metric_names.REWARD_TOTAL: 0.5})  # a second process's copy
    back = fsdp_check.read_back(tmp_path)
    assert back["duplicate_metric_rows"] == 1 and not back["written_once"]


def test_a_run_is_started_watched_and_ended_at_its_time_limit(tmp_path):
    """The training process runs in its own group: on a machine without GPUs the CLI refuses
    two GPUs by field (exit code and log tail reported); past the limit the group is ended."""
    import os

    args = fsdp_check.parse_args(["--model-shape", "tiny"])
    config = fsdp_check.run_config(args, tmp_path / "model", tmp_path / "p.jsonl", "ddp")
    refused = fsdp_check.train(config, tmp_path / "refused", timeout=120)
    assert refused["exit"] not in (0, "timeout")
    assert "training.num_gpus" in refused["log_tail"]
    cut = fsdp_check.train(config, tmp_path / "cut", timeout=0.1)
    assert cut["exit"] == "timeout" and cut["wall_s"] < 60
    assert cut["max_used_gib_per_gpu"] == {}  # no GPUs here
    with pytest.raises(ProcessLookupError):  # nothing of its process group is left
        os.killpg(cut["pid"], 0)
