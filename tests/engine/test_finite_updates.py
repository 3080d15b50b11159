"""An update whose gradients are NaN is skipped, noted and counted, and the run trains on with
finite weights (GRPO through TRL and our PPO); NaN for five updates in a row ends the run with
an error that says what to change. Real in-process runs of the default model; the NaN is
planted by the guard's fault-injection hook, since an overflow cannot be provoked on demand."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from engine.config.run_config import RunConfig
from engine.runtime.layout import final_model_dir, run_dir
from engine.tracking import metric_names
from engine.trainers import finite_updates
from engine.trainers.finite_updates import UpdateGuard, where_non_finite
from storage.paths import db_path
from storage.records.metrics import metric_series
from storage.records.notes import notes_of_run
from storage.runs import get_run
from storage.sqlite.db import Database
from storage.sqlite.schema import NoteKind, RunStatus
from tests.in_process_run import run_in_process


def config(algorithm: str, steps: int) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {
                "steps": steps,
                "prompts_per_step": 2,
                "save_steps": 0,
                "eval_samples": 0,
                "samples_per_log": 0,
            },
        }
    )


def weights_finite(data_dir, run_id: str) -> bool:
    folder = final_model_dir(run_dir(data_dir, run_id))
    tensors = [t for f in folder.glob("*.safetensors") for t in load_file(f).values()]
    return bool(tensors) and all(torch.isfinite(t).all() for t in tensors)


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_a_nan_update_is_skipped_noted_and_the_run_trains_on(data_dir, monkeypatch, algorithm):
    monkeypatch.setenv(finite_updates.FAULT_ENV, "2")
    run_id, status = run_in_process(data_dir, config(algorithm, 3))
    assert status == RunStatus.COMPLETED
    assert weights_finite(data_dir, run_id)  # without the guard every weight would be NaN
    with Database(db_path(data_dir)) as db:
        notes = notes_of_run(db, run_id)
        skipped = metric_series(db, [run_id], metric_names.SKIPPED_UPDATES)[run_id]
    assert [(n.kind, n.step) for n in notes] == [(NoteKind.SKIPPED_UPDATE, 2)]
    assert notes[0].message.startswith("Step 2: the gradients were NaN or infinite (in all ")
    assert (skipped.steps, skipped.values) == ([2], [1.0])


def test_five_nan_updates_in_a_row_end_the_run_with_what_to_change(data_dir, monkeypatch):
    monkeypatch.setenv(finite_updates.FAULT_ENV, "1,2,3,4,5")
    run_id, status = run_in_process(data_dir, config("grpo", 6))
    assert status == RunStatus.FAILED
    with Database(db_path(data_dir)) as db:
        run = get_run(db, run_id)
        assert len(notes_of_run(db, run_id)) == 5
    assert "NaN or infinite for 5 updates in a row" in run.error_message
    assert "lower training.learning_rate" in run.error_message


def test_finite_gradients_pass_and_reset_the_count():
    layer = torch.nn.Linear(3, 1)
    guard = UpdateGuard()
    layer.weight.grad = torch.tensor([[1.0, float("inf"), 0.0]])
    layer.bias.grad = torch.zeros(1)
    assert not guard.allow(layer, 1) and layer.weight.grad is None
    layer.weight.grad, layer.bias.grad = torch.ones(1, 3), torch.zeros(1)
    assert guard.allow(layer, 2) and layer.weight.grad is not None
    assert (guard.skipped, guard.in_a_row) == (1, 0)


def test_the_skip_names_the_bad_gradient_nearest_the_loss():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    model[0].weight.grad.fill_(float("nan"))  # spread down from layer 1
    model[1].weight.grad[0, 0] = float("inf")
    assert where_non_finite(list(model.named_parameters())) == (
        "in 2 of 6 gradient tensors, nearest the loss: 1.weight"
    )
    for p in model.parameters():
        p.grad.fill_(float("nan"))
    assert "all 6 gradient tensors: from the last trained layer or nearer" in where_non_finite(
        list(model.named_parameters())
    )


def test_the_skip_says_whether_the_loss_or_the_backward_went_bad(caplog):
    layer = torch.nn.Linear(2, 1)
    guard = UpdateGuard()
    for loss, said in ((float("nan"), "the loss was not finite"), (1.0, "the backward pass")):
        guard.losses.add(torch.tensor(0.5))
        guard.losses.add(torch.tensor(loss))
        layer.weight.grad, layer.bias.grad = torch.full((1, 2), float("inf")), torch.zeros(1)
        with caplog.at_level("WARNING"):
            assert not guard.allow(layer, 1)
        assert said in caplog.records[-1].getMessage()
    guard.losses.add(torch.tensor(float("nan")))  # a finite update starts the next watch afresh
    layer.weight.grad, layer.bias.grad = torch.ones(1, 2), torch.zeros(1)
    assert guard.allow(layer, 2) and guard.losses.bad is None


def test_the_skip_tells_the_heads_backward_from_the_layers(caplog):
    """The gradient the head sends back into the model is watched at its final norm: not finite
    there (the loss's or the head's backward overflowed), or finite (a layer's backward made the
    NaN). The default model, a real backward each time."""
    from engine.models.loading import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(device="cpu")
    guard = UpdateGuard()
    guard.watch_head(model)
    ids = tokenizer("1+1=", return_tensors="pt").input_ids
    for scale, said in (
        (float("inf"), "the gradient the LM head sent into the model was not"),
        (1.0, "the loss and the gradient the LM head sent into the model were finite"),
    ):
        guard.losses.add(torch.tensor(1.0))  # the loss the trainer saw: finite both times
        (model(ids).logits.float().mean() * scale).backward()
        for p in model.parameters():
            p.grad = torch.full_like(p, float("nan"))
        with caplog.at_level("WARNING"):
            assert not guard.allow(model, 1)
        assert said in caplog.records[-1].getMessage()
