"""The static-cache sampler inside real training steps on CPU: TRL's GRPO and RLOO and our PPO
sample through it, and report how far its log-probabilities are from the trainer's."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from transformers import TrainerCallback

from engine.config.run_config import RunConfig
from engine.generation.replica import ENV as BF16_SAMPLING_ENV
from engine.generation.replica import cpu_multiplies_bf16
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.run.stop_request import StopRequest
from engine.tasks import builtin_task
from engine.tracking import metric_names
from engine.trainers.ppo.trainer import PPOTrainer
from engine.trainers.trl_trainers import build_trl_trainer
from tests.engine.test_ppo_trainer import ListRecorder


class LogKeeper(TrainerCallback):
    def __init__(self) -> None:
        self.logs: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs or {}))


@pytest.fixture(params=["float32", "bfloat16"])
def sampling_dtype(request, monkeypatch):
    """The sampler on the float32 policy, or on its bf16 copy where this CPU multiplies bf16."""
    if request.param == "bfloat16" and not cpu_multiplies_bf16():
        pytest.skip("this CPU has no bf16 matrix instructions")
    monkeypatch.setenv(BF16_SAMPLING_ENV, "1" if request.param == "bfloat16" else "0")
    return request.param


def assert_gap(gap: float, runner, sampling_dtype: str) -> None:
    """float32: the sampler and the float32 trainer agree to rounding; bf16: a small gap."""
    if sampling_dtype == "float32":
        assert runner.replica is None and 0 <= gap < 1e-4
    else:
        assert runner.replica is not None and 0 < gap < 0.05


def config_for(algorithm: str, backend: str) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "generation": {"num_generations": 4, "max_completion_length": 24, "backend": backend},
            "training": {"steps": 1, "prompts_per_step": 2, "save_steps": 0, "eval_samples": 0},
            "rloo": {"beta": 0.0},
        }
    )


@pytest.mark.parametrize("algorithm", ["grpo", "rloo"])
def test_trl_step_samples_with_the_runner_and_logs_the_gap(algorithm, sampling_dtype, tmp_path):
    config = config_for(algorithm, "compiled")
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    keeper = LogKeeper()
    trainer = build_trl_trainer(
        config,
        model,
        tokenizer,
        Dataset.from_list(builtin_task(0).train_rows(8)),
        str(tmp_path),
        [keeper],
    )
    assert trainer._runner is not None
    calls = []
    generate = trainer._runner.generate
    trainer._runner.generate = lambda *a, **k: calls.append(len(a[0])) or generate(*a, **k)
    trainer.train()
    assert calls == [8]  # 2 prompts x 4 completions, one call
    logs = next(log for log in keeper.logs if metric_names.GEN_LOGPROB_GAP in log)
    assert_gap(logs[metric_names.GEN_LOGPROB_GAP], trainer._runner, sampling_dtype)
    assert logs[metric_names.GENERATION_TIME] > 0 and logs[metric_names.REWARD_TIME] > 0
    if sampling_dtype == "float32":  # the sampler is the policy: nothing to correct
        assert metric_names.GEN_IS_WEIGHT not in logs
    else:  # close policies: weights near 1, few completions past the cap
        assert 0.5 < logs[metric_names.GEN_IS_WEIGHT] < 1.5
        assert 0 <= logs[metric_names.GEN_IS_DROPPED] < 0.5
    batch = trainer.pop_generation_batch()
    assert len(batch.completion_ids) == 8 and all(batch.completion_ids)


def test_trl_hf_backend_keeps_transformers_generate(tmp_path):
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    trainer = build_trl_trainer(
        config_for("grpo", "hf"),
        model,
        tokenizer,
        Dataset.from_list(builtin_task(0).train_rows(8)),
        str(tmp_path),
        [],
    )
    assert trainer._runner is None


def test_ppo_step_samples_with_the_runner_and_records_the_gap(monkeypatch, tmp_path):
    monkeypatch.setenv(BF16_SAMPLING_ENV, "1")  # PPO samples its own policy all the same
    config = config_for("ppo", "compiled")
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    recorder = ListRecorder()
    trainer = PPOTrainer(
        config, model, tokenizer, builtin_task(0).train_rows(8), tmp_path, recorder, StopRequest()
    )
    assert trainer.runner is not None
    metrics, rollout = trainer.train_step(1)
    assert rollout.sampler_logprobs is not None
    assert_gap(metrics[metric_names.GEN_LOGPROB_GAP], trainer.runner, "float32")
    assert metrics[metric_names.GENERATION_TIME] > 0 and metrics[metric_names.REWARD_TIME] > 0
    mask = rollout.response_mask.bool()
    assert torch.equal(
        rollout.sampler_logprobs[~mask], torch.zeros_like(rollout.sampler_logprobs[~mask])
    )
