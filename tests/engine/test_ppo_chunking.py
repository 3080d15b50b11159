"""Chunked PPO log-probabilities and entropies equal the whole-tensor ones, values and grads."""

from __future__ import annotations

import pytest
import torch

from engine.trainers.ppo import rollout as ppo_rollout
from engine.trainers.ppo.formulas import (
    chunked_logprobs_entropy,
    entropy_from_logits,
    logprobs_from_logits,
)
from engine.trainers.ppo.value_head import PolicyWithValue
from tests.engine.test_ppo_trainer import (  # noqa: F401 (tiny_model_dir is a fixture)
    make_trainer,
    tiny_model_dir,
    tiny_run_config,
)
from tests.tiny_models import TINY_SHAPE


def _reference(logits: torch.Tensor, tokens: torch.Tensor, temperature: float):
    scaled = logits.double() / temperature
    return logprobs_from_logits(scaled, tokens), entropy_from_logits(scaled)


@pytest.mark.parametrize("chunk_elements", [1, 7 * 13, 3 * 5 * 13, 1 << 26])
def test_chunked_equals_unchunked_values_and_gradients(chunk_elements):
    # chunk sizes: smaller than a row of the vocabulary, some positions, some rows, everything
    torch.manual_seed(0)
    B, T, V = 4, 5, 13
    logits = (3 * torch.randn(B, T, V, dtype=torch.float64)).requires_grad_()
    tokens = torch.randint(V, (B, T))
    weights = torch.randn(B, T, dtype=torch.float64)

    lp_ref, ent_ref = _reference(logits, tokens, 0.7)
    (grad_ref,) = torch.autograd.grad(((lp_ref + 0.3 * ent_ref) * weights).sum(), logits)

    lp, ent = chunked_logprobs_entropy(logits, tokens, 0.7, chunk_elements=chunk_elements)
    assert lp.shape == ent.shape == (B, T)
    torch.testing.assert_close(lp.double(), lp_ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent.double(), ent_ref, rtol=1e-5, atol=1e-5)
    (grad,) = torch.autograd.grad(((lp.double() + 0.3 * ent.double()) * weights).sum(), logits)
    torch.testing.assert_close(grad, grad_ref, rtol=1e-5, atol=1e-6)


def test_low_precision_logits_are_upcast_per_chunk():
    torch.manual_seed(1)
    logits = (4 * torch.randn(3, 6, 50)).to(torch.bfloat16)
    tokens = torch.randint(50, (3, 6))
    lp, ent = chunked_logprobs_entropy(logits, tokens, 1.0, chunk_elements=100)
    assert lp.dtype == ent.dtype == torch.float32
    lp_ref, ent_ref = _reference(logits.float(), tokens, 1.0)
    torch.testing.assert_close(lp.double(), lp_ref, rtol=0, atol=1e-5)
    torch.testing.assert_close(ent.double(), ent_ref, rtol=0, atol=1e-5)


def test_completion_forward_matches_full_vocabulary_float32(monkeypatch):
    """PPO's forward gives the same numbers as the old whole-tensor float32 computation."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(2)
    config = LlamaConfig(**dict(TINY_SHAPE, vocab_size=40, hidden_size=16, intermediate_size=32))
    model = PolicyWithValue(LlamaForCausalLM(config).eval())
    torch.nn.init.normal_(model.value_head.summary.weight)
    input_ids = torch.randint(40, (3, 9))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, :2] = 0  # a left-padded prompt
    P, temperature = 4, 0.8
    monkeypatch.setattr("engine.trainers.ppo.formulas.CHUNK_ELEMENTS", 40 * 3)
    logprobs, values, entropy = ppo_rollout.completion_forward(
        model, input_ids, attention_mask, P, temperature
    )

    logits, ref_values = model(input_ids, attention_mask, keep=9 - P + 1)
    full = logits[:, :-1].float() / temperature  # what PPO used to materialise
    torch.testing.assert_close(logprobs, logprobs_from_logits(full, input_ids[:, P:]))
    torch.testing.assert_close(entropy, entropy_from_logits(full))
    torch.testing.assert_close(values, ref_values[:, :-1].float())


def test_entropy_modes_give_the_same_numbers_and_only_grad_backpropagates():
    torch.manual_seed(3)
    logits = torch.randn(2, 3, 11, requires_grad=True)
    tokens = torch.randint(11, (2, 3))
    lp, ent = chunked_logprobs_entropy(logits, tokens, 1.0, entropy="grad")
    lp_d, ent_d = chunked_logprobs_entropy(logits, tokens, 1.0, entropy="detached")
    lp_s, ent_s = chunked_logprobs_entropy(logits, tokens, 1.0, entropy="skip")
    torch.testing.assert_close(lp_d, lp)
    torch.testing.assert_close(lp_s, lp)
    torch.testing.assert_close(ent_d, ent)
    assert ent.requires_grad and not ent_d.requires_grad
    assert torch.equal(ent_s, torch.zeros_like(ent))
    with pytest.raises(ValueError, match="entropy must be one of"):
        chunked_logprobs_entropy(logits, tokens, 1.0, entropy="some")


def test_no_grad_passes_split_by_their_logits_size(tiny_model_dir, tmp_path, monkeypatch):  # noqa: F811
    """The rollout and reference forwards are cut into row chunks bounded by their logits,
    whatever the micro-batch, with the same numbers as one forward over every row."""
    config = tiny_run_config(tiny_model_dir, ppo_epochs=2, num_minibatches=1, kl_coef=0.1)
    trainer = make_trainer(config, tmp_path)
    rollout = trainer.rollouts.generate(1)
    n, T = rollout.response_mask.shape
    whole_ref, _ = trainer.rollouts.evaluate_rollout(rollout)
    whole_logprobs = rollout.logprobs.clone()

    vocab = trainer.policy.get_output_embeddings().weight.shape[0]
    monkeypatch.setattr(ppo_rollout, "INFERENCE_LOGITS_ELEMENTS", 2 * (T + 1) * vocab)
    assert trainer.rollouts._inference_size(rollout) == 2 < n
    split_ref, _ = trainer.rollouts.evaluate_rollout(rollout)
    torch.testing.assert_close(split_ref, whole_ref)
    torch.testing.assert_close(rollout.logprobs, whole_logprobs)
