"""PPO's fused LM head: the same log-probabilities, entropies and gradients as the logits."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from engine.models.lm_head import plain_head
from engine.trainers.ppo.formulas import entropy_from_logits, logprobs_from_logits
from engine.trainers.ppo.fused_head import head_logprobs
from engine.trainers.ppo.value_head import PolicyWithValue, completion_logprobs, position_ids_from
from tests.tiny_models import TINY_SHAPE


def _policy(seed: int, value_model: str = "shared") -> PolicyWithValue:
    torch.manual_seed(seed)
    model = PolicyWithValue(LlamaForCausalLM(LlamaConfig(**TINY_SHAPE)).eval(), value_model)
    torch.nn.init.normal_(model.value_head.summary.weight)
    return model


@pytest.mark.parametrize(
    ("entropy", "value_model"),
    [("grad", "shared"), ("detached", "shared"), ("skip", "shared"), ("grad", "separate")],
)
def test_fused_forward_matches_the_logits_and_their_gradients(entropy, value_model):
    fused, plain = _policy(0, value_model), _policy(0, value_model)
    ids = torch.randint(TINY_SHAPE["vocab_size"], (3, 10))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # a left-padded prompt
    keep, temperature = 6, 0.7
    targets = ids[:, -keep + 1 :]
    logprobs, values, ent = fused(ids, mask, keep, targets, temperature, entropy)

    logits, ref_values = plain(ids, mask, keep)  # the materialised path
    full = logits[:, :-1].float() / temperature
    torch.testing.assert_close(logprobs, logprobs_from_logits(full, targets))
    torch.testing.assert_close(values, ref_values)
    if entropy == "skip":
        assert torch.equal(ent, torch.zeros_like(ent))
    else:
        torch.testing.assert_close(ent, entropy_from_logits(full))
    assert ent.requires_grad == (entropy == "grad")

    bonus = ent.mean() if entropy == "grad" else 0.0
    ref_bonus = entropy_from_logits(full).mean() if entropy == "grad" else 0.0
    (logprobs.sum() + values.sum() + bonus).backward()
    (logprobs_from_logits(full, targets).sum() + ref_values.sum() + ref_bonus).backward()
    for (name, p), q in zip(plain.named_parameters(), fused.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, msg=name, atol=1e-5, rtol=1e-4)


def test_a_model_that_scales_its_logits_keeps_the_materialised_path():
    model = LlamaForCausalLM(LlamaConfig(**TINY_SHAPE))
    assert plain_head(model) is model.lm_head
    scaled = copy.deepcopy(model)
    scaled.config.logit_scale = 0.5
    assert plain_head(scaled) is None
    with pytest.raises(ValueError, match="entropy must be one of"):
        head_logprobs(model.lm_head, torch.zeros(1, 2, 32), torch.zeros(1, 2, dtype=int), 1.0, "x")


def test_without_the_fused_head_targets_take_the_logits_path():
    """What a sharded (FSDP) policy runs: the same numbers from materialised logits."""
    fused, logits_path = _policy(1), _policy(1)
    logits_path.fused_head = False
    ids = torch.randint(TINY_SHAPE["vocab_size"], (2, 8))
    mask = torch.ones_like(ids)
    targets = ids[:, -4:]
    expected = fused(ids, mask, 5, targets, 0.9, "detached")
    got = logits_path(ids, mask, 5, targets, 0.9, "detached")
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("fused", [True, False])
def test_completion_logprobs_serves_policy_and_reference_alike(fused):
    """The reference's log-probabilities (no adapters, no value head) and the policy's come from
    one helper: the same numbers on either path, and the hidden states only when asked."""
    policy = _policy(2)
    model = policy.policy
    ids = torch.randint(TINY_SHAPE["vocab_size"], (2, 9))
    mask = torch.ones_like(ids)
    mask[0, :2] = 0
    keep = 5
    targets = ids[:, -keep + 1 :]
    with torch.no_grad():
        logits = model(ids, attention_mask=mask, position_ids=position_ids_from(mask)).logits
        expected = logprobs_from_logits(logits[:, -keep:-1].float() / 0.8, targets)
        logprobs, entropies, hidden = completion_logprobs(
            model, ids, mask, keep, targets, 0.8, fused=fused
        )
        torch.testing.assert_close(logprobs, expected)
        assert hidden is None and torch.equal(entropies, torch.zeros_like(entropies))
        _, _, states = completion_logprobs(
            model, ids, mask, keep, targets, 0.8, "detached", fused=fused, hidden=True
        )
        values = policy(ids, mask, keep, targets, 0.8)[1]
        torch.testing.assert_close(values, policy.value_head(states[:, -keep:]))
