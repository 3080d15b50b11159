"""The static-cache sampler inside real training steps on CPU: TRL's GRPO and RLOO and our PPO
sample through it, and report how far its log-probabilities are from the trainer's."""

from __future__ import annotations

import pytest
import torch
from transformers import TrainerCallback

from engine.config.run_config import RunConfig
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.runtime.stop_request import StopRequest
from engine.tasks import builtin_task
from engine.tracking import metric_names
from engine.trainers.ppo.trainer import PPOTrainer
from tests.default_trainer import default_model_trainer
from tests.engine.test_ppo_trainer import ListRecorder


class LogKeeper(TrainerCallback):
    def __init__(self) -> None:
        self.logs: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs or {}))


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
def test_trl_step_samples_with_the_runner_and_logs_the_gap(algorithm, tmp_path):
    config = config_for(algorithm, "compiled")
    keeper = LogKeeper()
    trainer = default_model_trainer(config, tmp_path, callbacks=[keeper])
    assert trainer.generation_runner is not None
    calls = []
    generate = trainer.generation_runner.generate
    trainer.generation_runner.generate = lambda *a, **k: (
        calls.append(len(a[0])) or generate(*a, **k)
    )
    widths, score = [], trainer._generate_and_score_completions

    def scored(inputs):
        out = score(inputs)
        widths.append((out["prompt_ids"].shape[1], out["completion_ids"].shape[1]))
        return out

    trainer._generate_and_score_completions = scored
    trainer.train()
    assert calls == [8]  # 2 prompts x 4 completions, one call
    logs = next(log for log in keeper.logs if metric_names.GEN_LOGPROB_GAP in log)
    # float32 on CPU: the sampler and the trainer agree to rounding
    assert 0 <= logs[metric_names.GEN_LOGPROB_GAP] < 1e-4
    assert logs[metric_names.GENERATION_TIME] > 0 and logs[metric_names.REWARD_TIME] > 0
    batch = trainer.pop_generation_batch()
    assert len(batch.completion_ids) == 8 and all(batch.completion_ids)
    # The update's rows: the padded prompts, then completions as wide as the longest.
    prompt_width, completion_width = widths[0]
    assert completion_width == max(len(c) for c in batch.completion_ids)
    assert logs[metric_names.UPDATE_WIDTH] == prompt_width + completion_width


def test_trl_hf_backend_keeps_transformers_generate(tmp_path):
    trainer = default_model_trainer(config_for("grpo", "hf"), tmp_path)
    assert trainer.generation_runner is None


def test_ppo_step_samples_with_the_runner_and_records_the_gap(tmp_path):
    config = config_for("ppo", "compiled")
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    recorder = ListRecorder()
    trainer = PPOTrainer(
        config, model, tokenizer, builtin_task(0).train_rows(8), tmp_path, recorder, StopRequest()
    )
    assert trainer.runner is not None
    metrics, rollout = trainer.train_step(1)
    assert rollout.sampler_logprobs is not None
    assert 0 <= metrics[metric_names.GEN_LOGPROB_GAP] < 1e-4
    assert metrics[metric_names.GENERATION_TIME] > 0 and metrics[metric_names.REWARD_TIME] > 0
    assert metrics[metric_names.UPDATE_WIDTH] == rollout.input_ids.shape[1]
    mask = rollout.response_mask.bool()
    assert torch.equal(
        rollout.sampler_logprobs[~mask], torch.zeros_like(rollout.sampler_logprobs[~mask])
    )
