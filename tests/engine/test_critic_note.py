"""A PPO run whose critic predicts noise says so (issue 43): a typed note, written by the run,
once its explained variance has stayed below 0 after the warm-up. The real run is the default
model's, in process through the worker and SQLite, with its critic's head planted to add noise."""

from __future__ import annotations

import torch

from engine.config.run_config import RunConfig
from engine.tracking import metric_names
from engine.tracking.critic_watch import PATIENCE, CriticWatch
from engine.tracking.recorder import NullRecorder
from engine.trainers.ppo import value_head
from storage.paths import db_path
from storage.records.notes import notes_of_run
from storage.sqlite.db import Database
from storage.sqlite.schema import NoteKind, RunStatus
from tests.in_process_run import run_in_process


def ppo_config(steps: int, warmup: int) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": "ppo",
            "generation": {"num_generations": 4, "max_completion_length": 16},
            "training": {
                "steps": steps,
                "prompts_per_step": 2,
                "save_steps": 0,
                "eval_samples": 0,
                "samples_per_log": 0,
            },
            "ppo": {"value_warmup_steps": warmup},
        }
    )


def test_a_critic_planted_to_predict_noise_gets_a_note_after_its_warm_up(data_dir, monkeypatch):
    planted = value_head.ValueHead.forward

    def noisy(self, hidden_states: torch.Tensor) -> torch.Tensor:
        values = planted(self, hidden_states)
        return values + 10.0 * torch.randn_like(values)  # returns are of order 1

    monkeypatch.setattr(value_head.ValueHead, "forward", noisy)
    warmup = 1
    run_id, status = run_in_process(data_dir, ppo_config(warmup + PATIENCE, warmup))
    assert status == RunStatus.COMPLETED
    with Database(db_path(data_dir)) as db:
        notes = [n for n in notes_of_run(db, run_id) if n.kind == NoteKind.CRITIC_NOT_LEARNING]
    assert len(notes) == 1, notes
    (note,) = notes
    assert note.step == warmup + PATIENCE
    assert note.detail["warmup_steps"] == warmup
    assert len(note.detail["explained_variance"]) == PATIENCE
    assert all(v < 0 for v in note.detail["explained_variance"])
    assert note.message.startswith("the critic's explained variance stayed below 0 for 5 steps")


class Notes(NullRecorder):
    def __init__(self) -> None:
        self.notes: list[tuple[int, NoteKind]] = []

    def note(self, step, kind, message, detail=None) -> None:
        self.notes.append((step, kind))


def feed(watch: CriticWatch, values: list[float]) -> None:
    for step, ev in enumerate(values, start=1):
        watch.metrics(step, {metric_names.PPO_EXPLAINED_VARIANCE: ev})


def test_the_watch_waits_for_the_warm_up_and_a_run_of_negative_steps():
    inner = Notes()
    feed(CriticWatch(inner, warmup_steps=3), [-1, -1, -1, -1, -1, -1, -1])  # 4 after warm-up
    assert inner.notes == []
    feed(CriticWatch(inner), [-1, -1, 0.2, -1, -1, -1, -1, float("nan")])  # broken at step 3
    assert inner.notes == []
    watch = CriticWatch(inner)
    feed(watch, [-0.5] * 12)
    assert inner.notes == [(PATIENCE, NoteKind.CRITIC_NOT_LEARNING)]  # once
