"""training.rollout async in real TRL steps on the CPU: the next step's completions come from
the weights of the step before, and the loss's importance weights are the ratio a plain
recomputation gives."""

from __future__ import annotations

import math
import threading

import pytest
import torch
from transformers import TrainerCallback

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.tracking import metric_names
from engine.trainers.trl.importance import CAP
from engine.trainers.trl.rollout_ahead import BatchLookahead
from engine.trainers.trl.sampling import SAMPLER_LOGPROBS
from tests.default_trainer import default_model_trainer
from tests.engine.test_generation_training import LogKeeper


def config_for(
    algorithm: str, rollout: str, steps: int, learning_rate: float = 5e-5, tokens: int = 16
) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "generation": {"num_generations": 4, "max_completion_length": tokens},
            "training": {
                "steps": steps,
                "prompts_per_step": 2,
                "save_steps": 0,
                "eval_samples": 0,
                "rollout": rollout,
                "learning_rate": learning_rate,
            },
            "rloo": {"beta": 0.0},
        }
    )


class StepBatches(TrainerCallback):
    """Each step's batch as the loss saw it, and the weights the step trained from."""

    def __init__(self) -> None:
        self.trainer = None
        self.batches: dict[int, dict] = {}
        self.weights: dict[int, dict[str, torch.Tensor]] = {}

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        self.weights[state.global_step + 1] = {
            k: v.detach().clone() for k, v in model.state_dict().items()
        }

    def on_step_end(self, args, state, control, **kwargs):
        self.batches[state.global_step] = dict(self.trainer._buffered_inputs[0])


class FlattenAfterStep(TrainerCallback):
    """After the optimizer step of ``step``: the final norm's weight zeroed, so every logit is
    0 and the next completions sampled are uniform over the vocabulary."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step == self.step:
            with torch.no_grad():
                model.model.norm.weight.zero_()


def uniform(batch: dict, vocab: int) -> bool:
    mask = batch["completion_mask"].bool()
    logps = batch[SAMPLER_LOGPROBS][mask]
    return bool(torch.allclose(logps, torch.full_like(logps, -math.log(vocab)), atol=1e-4))


@pytest.mark.parametrize("rollout", ["sync", "async"])
def test_an_async_step_trains_on_completions_of_the_step_before(rollout, tmp_path):
    batches = StepBatches()
    trainer = default_model_trainer(config_for("grpo", rollout, steps=3), tmp_path, 32, [batches])
    trainer.add_callback(FlattenAfterStep(1))
    batches.trainer = trainer
    trainer.train()
    vocab = trainer.model.config.vocab_size
    assert not uniform(batches.batches[1], vocab)
    if rollout == "sync":  # step 2 samples after the change
        assert uniform(batches.batches[2], vocab)
    else:  # step 2's completions were sampled while step 1 trained, step 3's after the change
        assert not uniform(batches.batches[2], vocab)
        assert uniform(batches.batches[3], vocab)


def completion_logps(model, weights: dict, batch: dict, temperature: float) -> torch.Tensor:
    """Log-probabilities of the batch's completion tokens under ``weights``, by a plain forward."""
    model.load_state_dict(weights)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    width = batch["completion_ids"].shape[1]
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -width - 1 : -1]
    logps = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logps.gather(-1, batch["completion_ids"].unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize("algorithm", ["grpo", "rloo"])
def test_the_importance_weights_are_the_ratio_of_the_two_policies(algorithm, tmp_path):
    batches, keeper = StepBatches(), LogKeeper()
    # Long enough for the default model's answers, whose rewards then differ within a group.
    config = config_for(algorithm, "async", steps=2, learning_rate=3e-3, tokens=64)
    trainer = default_model_trainer(config, tmp_path, 32, [batches, keeper])
    batches.trainer = trainer
    trainer.train()
    batch = batches.batches[2]  # sampled while step 1 trained
    temperature = config.generation.temperature
    old = completion_logps(trainer.model, batches.weights[1], batch, temperature)
    new = completion_logps(trainer.model, batches.weights[2], batch, temperature)
    mask = batch["completion_mask"].float()
    # The sampler's own log-probabilities are those of step 1's weights.
    assert torch.allclose(batch[SAMPLER_LOGPROBS] * mask, old * mask, atol=1e-4)
    expected = ((torch.exp(new - old).clamp(max=CAP) * mask).sum() / mask.sum()).item()
    assert abs(expected - 1.0) > 1e-3  # the update moved the policy: the weights mean something
    logged = [log[metric_names.GEN_IS_RATIO_MEAN] for log in keeper.logs if "loss" in log]
    assert logged[1] == pytest.approx(expected, abs=1e-4)
    assert [log[metric_names.STALENESS] for log in keeper.logs if "loss" in log] == [0.0, 1.0]


def test_the_lookahead_gives_the_loop_its_batches_in_order():
    lookahead, batches = BatchLookahead(), iter(range(7))
    taken = [lookahead.take(batches, 2) for _ in range(4)]
    assert taken == [[0, 1], [2, 3], [4, 5], [6]]
    assert lookahead.next_batch() is None
    fresh = iter(range(10, 14))  # a new epoch's iterator starts afresh
    assert lookahead.take(fresh, 2) == [10, 11] and lookahead.next_batch() == 12


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"algorithm": "ppo"}, "ppo"),
        ({"generation": {"backend": "hf"}}, "generation.backend hf"),
        ({"grpo": {"num_iterations": 2}}, "grpo.num_iterations"),
        ({"training": {"num_gpus": 2, "prompts_per_step": 2}}, "one GPU"),
    ],
)
def test_async_names_what_stands_in_its_way(changes, named):
    data = {"training": {"rollout": "async", "prompts_per_step": 2}}
    for section, value in changes.items():
        if isinstance(value, dict):
            data.setdefault(section, {}).update(value)
        else:
            data[section] = value
    with pytest.raises(ConfigError, match=r"training\.rollout") as err:
        RunConfig.from_dict(data)
    assert named in str(err.value)


class StopAt(TrainerCallback):
    """Stops training at ``step`` and keeps the step of each training log."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.logged: list[int] = []

    def on_step_end(self, args, state, control, **kwargs):
        control.should_training_stop = state.global_step >= self.step

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.logged.append(state.global_step)


def test_a_stop_while_the_next_step_samples_logs_each_step_once_and_ends_the_worker(tmp_path):
    stop = StopAt(2)
    trainer = default_model_trainer(config_for("grpo", "async", steps=6), tmp_path, 32, [stop])
    trainer.train()
    assert stop.logged == [1, 2]
    assert not trainer.rollout_ahead.busy  # the batch sampled ahead for step 3 was dropped
    assert not [t for t in threading.enumerate() if t.name.startswith("rollout-ahead")]
