"""A query row the mask closes entirely is opened in every trainer, and nothing scored changes."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from transformers import LlamaConfig, LlamaForCausalLM

from engine.config.run_config import RunConfig
from engine.models.char_tokenizer import build_char_tokenizer
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.runtime.stop_request import StopRequest
from engine.tasks import builtin_task
from engine.trainers.compiled_layers import decoder_layers
from engine.trainers.masked_rows import REPAIR_ENV, open_empty_rows, repair_empty_rows
from engine.trainers.ppo.trainer import PPOTrainer
from engine.trainers.trl.build import build_trl_trainer
from tests.engine.test_ppo_trainer import ListRecorder
from tests.tiny_models import TINY_SHAPE, save_tiny_llama


def closed_rows(mask: torch.Tensor) -> int:
    return int((~mask).all(dim=-1).sum())


def record_masks(layers: list[torch.nn.Module]) -> list[torch.Tensor]:
    """The masks the layers receive (hooks added last, so after any repair)."""
    seen: list[torch.Tensor] = []
    for layer in layers:
        layer.register_forward_pre_hook(
            lambda module, args, kwargs: seen.append(kwargs["attention_mask"]), with_kwargs=True
        )
    return seen


def left_padded(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(3, vocab, (3, 8), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[1, :3] = mask[2, :5] = 0  # shorter prompts, padded on the left
    mask[0, 7:] = 0  # a shorter completion, padded on the right
    return ids, mask


def test_only_rows_without_a_key_are_opened():
    mask = torch.tensor([[False, False, False], [True, False, False], [True, True, False]])
    opened = open_empty_rows(mask[None, None])[0, 0]
    assert opened[0].all()
    assert torch.equal(opened[1:], mask[1:])
    additive = torch.zeros(1, 1, 3, 3)
    assert open_empty_rows(additive) is additive and open_empty_rows(None) is None
    block_mask = object()  # flex attention's BlockMask is no tensor
    assert open_empty_rows(block_mask) is block_mask
    padding = torch.tensor([[False, True]])  # flash attention's (batch, keys) mask
    assert open_empty_rows(padding) is padding


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**TINY_SHAPE, attn_implementation="sdpa"))


def test_repair_changes_no_scored_log_prob_or_gradient():
    model = tiny_llama()
    ids, mask = left_padded(model.config.vocab_size)
    scored = (mask[:, :-1] * mask[:, 1:]).bool()  # from a real token to the next

    def scored_log_probs_and_gradients():
        model.zero_grad()
        logps = model(input_ids=ids, attention_mask=mask).logits[:, :-1].log_softmax(-1)
        picked = logps.gather(-1, ids[:, 1:, None])[..., 0][scored]
        picked.sum().backward()
        return picked.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    before = record_masks(model.model.layers[:1])
    expected_logps, expected_grads = scored_log_probs_and_gradients()
    assert closed_rows(before[0]) == 3 + 5  # the left padding's rows
    assert repair_empty_rows(model) == 2
    after = record_masks(model.model.layers)
    logps, grads = scored_log_probs_and_gradients()
    assert [closed_rows(m) for m in after[-2:]] == [0, 0]
    torch.testing.assert_close(logps, expected_logps, atol=1e-6, rtol=1e-6)
    for name, grad in expected_grads.items():
        torch.testing.assert_close(grads[name], grad, atol=1e-6, rtol=1e-5, msg=name)


def test_switched_off_it_leaves_the_layers_alone(monkeypatch):
    monkeypatch.setenv(REPAIR_ENV, "0")
    model = tiny_llama()
    assert repair_empty_rows(model) == 0
    assert not model.model.layers[0]._forward_pre_hooks


def test_grpo_trainer_repairs_its_model(tmp_path):
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    config = RunConfig.from_dict(
        {"generation": {"num_generations": 2}, "training": {"steps": 1, "prompts_per_step": 2}}
    )
    rows = Dataset.from_list(builtin_task(0).train_rows(4))
    trainer = build_trl_trainer(config, model, tokenizer, rows, str(tmp_path), [])
    seen = record_masks(decoder_layers(trainer.model))
    ids, mask = left_padded(len(tokenizer))
    with torch.no_grad():
        trainer.model(input_ids=ids, attention_mask=mask)
    assert seen and all(closed_rows(m) == 0 for m in seen)


@pytest.mark.parametrize("value_model", ["shared", "separate"])
def test_ppo_trainer_repairs_policy_reference_and_critic(tmp_path, value_model):
    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    config = RunConfig.from_dict(
        {
            "algorithm": "ppo",
            "model": {"name_or_path": str(model_dir)},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {"steps": 1, "prompts_per_step": 2},
            "ppo": {"value_model": value_model, "kl_coef": 0.05},
        }
    )
    model, tokenizer = load_model_and_tokenizer(config.model, device="cpu")
    rows = builtin_task(0).train_rows(4)
    trainer = PPOTrainer(
        config, model, tokenizer, rows, tmp_path / "run", ListRecorder(), StopRequest()
    )
    ids, mask = left_padded(len(tokenizer))
    bodies = [trainer.policy, trainer.parts.ref_policy, trainer.parts.unwrapped.value_backbone]
    for body in [b for b in bodies if b is not None]:
        layers = decoder_layers(body) or list(body.layers)
        seen = record_masks(layers)
        with torch.no_grad():
            body(input_ids=ids, attention_mask=mask)
        assert seen and all(closed_rows(m) == 0 for m in seen), type(body).__name__
