"""``ppo.reward_normalization: group``: each prompt's sampled completions standardised among
themselves (GRPO's outcome advantage, Shao et al. 2024), so PPO's returns carry the per-prompt
baseline its young critic cannot learn (issue 43). Checked against a naive loop, and in a real
PPO step of a tiny model."""

from __future__ import annotations

import statistics

import pytest
import torch

from engine.config.run_config import RunConfig
from engine.trainers.ppo.formulas import group_standardize
from tests.engine.test_ppo_trainer import make_trainer, tiny_model_dir, tiny_run_config  # noqa: F401


def naive(scores: list[float], group_size: int) -> list[float]:
    out = []
    for start in range(0, len(scores), group_size):
        group = scores[start : start + group_size]
        mean, std = statistics.fmean(group), statistics.pstdev(group)
        out += [(s - mean) / max(std, 1e-8) for s in group]
    return out


def test_group_standardize_matches_a_naive_loop():
    scores = [1.0, 0.0, 0.5, 1.5, 2.0, 2.0, 2.0, 2.0, -1.0, 3.0, 0.0, 0.0]
    got = group_standardize(torch.tensor(scores), 4)
    assert got.tolist() == pytest.approx(naive(scores, 4), abs=1e-6)
    assert got[4:8].tolist() == [0.0] * 4  # a group that all scored the same: no signal
    with pytest.raises(ValueError, match="groups of 4"):
        group_standardize(torch.zeros(6), 4)


def test_a_ppo_step_standardises_each_prompts_scores(tiny_model_dir, tmp_path):  # noqa: F811
    data = tiny_run_config(tiny_model_dir, reward_normalization="group").to_dict()
    data["generation"]["num_generations"] = 4
    config = RunConfig.from_dict(data)
    trainer = make_trainer(config, tmp_path)
    raw = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 1.5, 0.5])  # 2 prompts x 4 samples
    shaped = trainer.rollouts.shape_scores(raw)
    assert shaped.tolist() == pytest.approx(naive(raw.tolist(), 4), abs=1e-6)
