"""What a run tells its view as data: a retry after running out of memory, and a reward
component that pays the same on every sample (the default model with a format it never
writes). One real in-process run serves both."""

from __future__ import annotations

from engine.config.run_config import RunConfig
from engine.run.oom_retry import retry_config
from engine.runtime import oom_fault
from storage.paths import db_path
from storage.records.notes import notes_of_run
from storage.sqlite.db import Database
from storage.sqlite.schema import NoteKind, RunStatus
from tests.in_process_run import run_in_process


def config(micro_batch: int | None = 4, **training) -> RunConfig:
    return RunConfig.from_dict(
        {
            "reward": {
                "components": [
                    {"name": "correctness", "weight": 1.0},
                    # the default model writes <think>, never <scratchpad>
                    {"name": "format", "weight": 0.5, "params": {"think_tag": "scratchpad"}},
                ]
            },
            "generation": {"num_generations": 4, "max_completion_length": 16},
            "training": {
                "steps": 3,
                "prompts_per_step": 2,
                "micro_batch_size": micro_batch,
                "save_steps": 0,
                "eval_samples": 0,
                "samples_per_log": 8,
                **training,
            },
        }
    )


def test_the_retry_halves_the_micro_batch_within_the_batch_rule():
    assert retry_config(config(4), 4).training.micro_batch_size == 2
    assert retry_config(config(None), None).training.micro_batch_size == 4  # 8 ran out
    odd = RunConfig.from_dict({**config(None).to_dict(), "training": {"prompts_per_step": 3}})
    assert retry_config(odd, 24).training.micro_batch_size == 12
    assert retry_config(odd, 3).training.micro_batch_size == 1
    assert retry_config(config(1), 1) is None
    assert retry_config(config(4, num_gpus=2), 4) is None


def test_a_run_out_of_memory_retries_at_half_the_micro_batch_and_notes_a_constant_format(
    data_dir, monkeypatch, caplog
):
    monkeypatch.setenv(oom_fault.FAULT_ENV, "1")
    monkeypatch.setattr(oom_fault, "_injected", False)
    run_id, status = run_in_process(data_dir, config(4))
    with Database(db_path(data_dir)) as db:
        notes = notes_of_run(db, run_id)
    assert status == RunStatus.COMPLETED
    kinds = [n.kind for n in notes]
    assert kinds == [NoteKind.OUT_OF_MEMORY_RETRY, NoteKind.CONSTANT_COMPONENT], notes
    retry, constant = notes
    assert retry.detail == {"from": 4, "to": 2}
    assert retry.message == "Out of GPU memory at micro-batch 4; retrying once at micro-batch 2"
    assert "retrying once at micro-batch 2" in caplog.text
    assert constant.detail["name"] == "format" and constant.detail["value"] == 0
    assert constant.message.startswith("format paid 0 on all ")
    assert "the model never writes `<scratchpad>`; try soft format" in constant.message


def test_a_second_out_of_memory_ends_the_run(data_dir, monkeypatch):
    monkeypatch.setenv(oom_fault.FAULT_ENV, "1")
    monkeypatch.setattr(oom_fault, "_injected", False)
    calls = []

    def twice() -> None:  # out of memory in the retry as well
        calls.append(1)
        if len(calls) <= 2:
            import torch

            raise torch.OutOfMemoryError("out of memory again")

    monkeypatch.setattr("engine.trainers.callbacks.inject_fault", twice)
    _, status = run_in_process(data_dir, config(4, steps=1, samples_per_log=0))
    assert status == RunStatus.FAILED and len(calls) == 2
