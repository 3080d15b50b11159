"""The critic's warm-up (``ppo.value_warmup_steps``): real PPO steps of a tiny model, in which
the policy's weights stay put and the critic's move, until the warm-up ends."""

from __future__ import annotations

import torch

from engine.config.run_config import RunConfig
from tests.engine.test_ppo_trainer import make_trainer, tiny_model_dir, tiny_run_config  # noqa: F401

# Token repeats vary among a random model's completions, so every step has a gradient.
VARIED_REWARD = {
    "components": [{"name": "repetition", "weight": 1.0, "params": {"unit": "tokens", "n": 1}}]
}


def warmup_config(model_dir, **ppo) -> RunConfig:
    data = tiny_run_config(model_dir, ppo_epochs=1, num_minibatches=1, **ppo).to_dict()
    return RunConfig.from_dict({**data, "reward": VARIED_REWARD})


def weights(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters() if p.requires_grad}


def changed(before: dict[str, torch.Tensor], module: torch.nn.Module) -> bool:
    return any(not torch.equal(before[n], p) for n, p in module.named_parameters() if n in before)


def test_warmup_steps_train_the_critic_alone_then_both(tiny_model_dir, tmp_path):  # noqa: F811
    config = warmup_config(tiny_model_dir, value_warmup_steps=1)
    trainer = make_trainer(config, tmp_path)
    critic = trainer.parts.unwrapped.value_head
    policy, head = weights(trainer.policy), weights(critic)
    trainer.train_step(1)
    assert not changed(policy, trainer.policy)  # the warm-up: the policy stays put
    assert changed(head, critic)  # while the critic learns
    assert trainer.optimizer.param_groups[0]["lr"] == config.training.learning_rate
    trainer.train_step(2)
    assert changed(policy, trainer.policy)  # after it, both learn
