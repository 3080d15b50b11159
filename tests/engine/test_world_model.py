"""The world-model loss (issue 24): GRPO's loss plus the cross-entropy on the tool-result tokens,
checked against a plain forward of the model and a naive loop, for each normalisation."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from trl import GRPOTrainer

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks import builtin_task
from engine.tracking import metric_names
from engine.trainers.trl.build import build_trl_args, build_trl_trainer

MAX_LEN = 12


def config(coeff: float, normalization: str = "selected_tokens") -> RunConfig:
    return RunConfig.from_dict(
        {
            "generation": {
                "num_generations": 2,
                "max_completion_length": MAX_LEN,
                "temperature": 1.0,
            },
            "training": {"steps": 1, "prompts_per_step": 2, "save_steps": 0, "eval_samples": 0},
            "grpo": {"world_model_coeff": coeff, "world_loss_normalization": normalization},
            "tools": {"builtin": ["calculator"]},
        }
    )


@pytest.fixture(scope="module")
def model_and_tokenizer():
    return load_model_and_tokenizer(ModelSpec(), device="cpu")


def trainer_for(cfg: RunConfig, model_and_tokenizer, tmp_path):
    model, tokenizer = model_and_tokenizer
    rows = builtin_task(0).train_rows(4)
    trainer = build_trl_trainer(cfg, model, tokenizer, Dataset.from_list(rows), str(tmp_path), [])
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 2  # the loss is scaled for accumulation
    return trainer


def batch(vocab: int) -> dict[str, torch.Tensor]:
    """Two prompts' rollouts: model text, a tool result (tool_mask 0), more text, padding."""
    g = torch.Generator().manual_seed(0)
    prompt_ids = torch.randint(3, vocab, (4, 5), generator=g)
    completion_ids = torch.randint(3, vocab, (4, MAX_LEN), generator=g)
    completion_mask = torch.ones(4, MAX_LEN, dtype=torch.long)
    completion_mask[1, 9:] = 0  # a shorter rollout
    completion_mask[3, 6:] = 0
    tool_mask = torch.ones(4, MAX_LEN, dtype=torch.long)
    tool_mask[0, 3:7] = 0  # 4 tool-result tokens
    tool_mask[1, 2:4] = 0
    tool_mask[1, 6:8] = 0  # two results in one rollout
    # rollout 2 called no tool; rollout 3's result sits partly in its padding
    tool_mask[3, 4:8] = 0
    return {
        "prompt_ids": prompt_ids,
        "prompt_mask": torch.ones_like(prompt_ids),
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
        "advantages": torch.tensor([0.5, -0.5, 1.0, -1.0]),
        "num_items_in_batch": (completion_mask * tool_mask).sum(),
    }


def naive_cross_entropy(model, inputs, normalization: str) -> torch.Tensor:
    """-log p of each tool-result token from a plain forward, averaged in loops."""
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    P = inputs["prompt_ids"].shape[1]
    per_row = []
    for b in range(ids.shape[0]):
        ces = []
        for t in range(MAX_LEN):
            real = inputs["completion_mask"][b, t] == 1
            if real and inputs["tool_mask"][b, t] == 0:
                logp = torch.log_softmax(logits[b, P + t - 1], dim=-1)[ids[b, P + t]]
                ces.append(-logp)
        per_row.append(ces)
    if normalization == "selected_tokens":
        every = [ce for row in per_row for ce in row]
        return sum(every) / len(every)
    if normalization == "sequence_mean":
        return sum(sum(row) / max(len(row), 1) for row in per_row) / len(per_row)
    return sum(sum(row) / MAX_LEN for row in per_row) / len(per_row)


@pytest.mark.parametrize(
    "normalization", ["selected_tokens", "sequence_mean", "seq_mean_token_sum_norm"]
)
def test_loss_is_grpo_plus_the_cross_entropy_on_tool_results(
    normalization, model_and_tokenizer, tmp_path
):
    coeff = 0.3
    trainer = trainer_for(config(coeff, normalization), model_and_tokenizer, tmp_path)
    inputs = batch(trainer.model.config.vocab_size)
    grpo = GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
    loss = trainer._compute_loss(trainer.model, inputs)
    ce = naive_cross_entropy(trainer.model, inputs, normalization)
    torch.testing.assert_close(loss, grpo + coeff * ce / 2, rtol=1e-5, atol=1e-6)
    logged = trainer._metrics["train"][metric_names.WORLD_MODEL_LOSS]
    assert logged == [pytest.approx(ce.item(), rel=1e-5)]


def test_the_cross_entropy_has_a_gradient(model_and_tokenizer, tmp_path):
    trainer = trainer_for(config(1.0), model_and_tokenizer, tmp_path)
    inputs = batch(trainer.model.config.vocab_size)
    inputs["advantages"] = torch.zeros(4)  # no policy gradient: what moves is the world model
    trainer.model.zero_grad()
    trainer._compute_loss(trainer.model, inputs).backward()
    grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)


def test_coefficient_zero_is_grpo_exactly(model_and_tokenizer, tmp_path):
    trainer = trainer_for(config(0.0), model_and_tokenizer, tmp_path)
    inputs = batch(trainer.model.config.vocab_size)
    grpo = GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
    assert torch.equal(trainer._compute_loss(trainer.model, inputs), grpo)
    assert metric_names.WORLD_MODEL_LOSS not in trainer._metrics["train"]


def test_refused_by_name_without_tools_and_kept_out_of_trl():
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict({"grpo": {"world_model_coeff": 0.1}})
    assert err.value.field == "grpo.world_model_coeff"
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict({"grpo": {"world_loss_normalization": "tokens"}})
    assert err.value.field == "grpo.world_loss_normalization"
    args = build_trl_args(config(0.5), "/tmp/unused")
    assert not hasattr(args, "world_model_coeff")
