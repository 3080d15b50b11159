"""The bfloat16 copy the CPU sampler decodes where the CPU multiplies bf16: its weights are the
policy's with the adapters merged, it follows an optimizer step, and it samples close to the
float32 policy."""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from engine.generation import replica as replica_module
from engine.generation.decode_weights import effective_weight
from engine.generation.decoder import base_model_of
from engine.generation.replica import ENV, BF16Replica, bf16_replica, cpu_multiplies_bf16
from engine.generation.runner import GenerationRunner
from engine.trainers.ppo.formulas import logprobs_from_logits
from tests.tiny_models import TINY_SHAPE


def lora_policy(tie: bool = True):
    torch.manual_seed(0)
    config = LlamaConfig(**TINY_SHAPE, eos_token_id=1, pad_token_id=0, tie_word_embeddings=tie)
    model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=4, target_modules="all-linear"))
    with torch.no_grad():  # a trained adapter: B is zero at init
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)
    return model.eval()


def linears(model):
    return {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}


@pytest.mark.parametrize("tie", [True, False])
def test_the_copy_holds_the_policys_weights_with_adapters_merged(tie):
    policy = lora_policy(tie)
    base = base_model_of(policy)
    copy = BF16Replica.build(base)
    assert copy is not None
    live = dict(base.named_modules())
    for name, linear in linears(copy.model).items():
        assert linear.weight.dtype == torch.bfloat16
        merged = effective_weight(live[name])[0].to(torch.bfloat16)  # one rounding
        assert torch.equal(linear.weight, merged), name
    embed = copy.model.model.embed_tokens.weight
    assert torch.equal(embed, base.model.embed_tokens.weight.to(torch.bfloat16))
    assert (copy.model.lm_head.weight is embed) == tie
    # The rotary frequencies stay float32: rounded, every position would drift.
    inv_freq = copy.model.model.rotary_emb.inv_freq
    assert inv_freq.dtype == torch.float32
    assert torch.equal(inv_freq, base.model.rotary_emb.inv_freq)
    assert not any(t.is_meta for t in [*copy.model.parameters(), *copy.model.buffers()])


def test_refresh_follows_an_optimizer_step():
    policy = lora_policy()
    base = base_model_of(policy)
    copy = BF16Replica.build(base)
    name = "model.layers.0.self_attn.q_proj"
    before = linears(copy.model)[name].weight.clone()
    with torch.no_grad():
        for param_name, param in policy.named_parameters():
            if "lora_B" in param_name or "norm" in param_name:
                param.add_(0.5)
    copy.refresh()
    after = linears(copy.model)[name].weight
    assert not torch.equal(before, after)
    assert torch.equal(after, effective_weight(dict(base.named_modules())[name])[0].bfloat16())
    norm = copy.model.model.layers[0].input_layernorm.weight
    assert torch.equal(norm, base.model.layers[0].input_layernorm.weight.bfloat16())


def test_the_runner_samples_from_the_copy_close_to_the_policy(monkeypatch):
    if not cpu_multiplies_bf16():
        pytest.skip("this CPU has no bf16 matrix instructions")
    monkeypatch.setenv(ENV, "1")
    policy = lora_policy()
    runner = GenerationRunner(policy, bf16_copy=True)
    assert runner.replica is not None
    assert runner.decoder.body is runner.replica.model.model
    prompts = [[5, 6, 7, 8, 9], [10, 11], [5, 6, 7, 8, 9]]
    out = runner.generate(
        prompts, max_new_tokens=16, temperature=1.0, top_p=1.0, eos_ids=[], pad_id=0, seed=0
    )
    for p, c, lp in zip(prompts, out.completion_ids, out.logprobs, strict=True):
        ids = torch.tensor([p + c])
        with torch.no_grad():
            policy_logits = policy(ids).logits[:, len(p) - 1 : -1].float()
            copy_logits = runner.replica.model(ids).logits[:, len(p) - 1 : -1].float()
        sampled = torch.tensor(lp)
        # The copy's own forward to bf16 rounding; the float32 policy within a small gap.
        copy_lp = logprobs_from_logits(copy_logits, torch.tensor([c]))[0]
        assert (copy_lp - sampled).abs().max().item() < 0.05
        policy_lp = logprobs_from_logits(policy_logits, torch.tensor([c]))[0]
        assert 0 < (policy_lp - sampled).abs().mean().item() < 0.05


def test_the_copy_is_made_only_where_asked_and_where_it_fits(monkeypatch):
    policy = lora_policy()
    base = base_model_of(policy)
    monkeypatch.setenv(ENV, "0")
    assert bf16_replica(base) is None
    assert GenerationRunner(policy, bf16_copy=True).replica is None
    monkeypatch.setenv(ENV, "1")
    assert GenerationRunner(policy).replica is None  # a trainer that cannot correct for it
    assert bf16_replica(base.to(torch.bfloat16)) is None  # already bf16: nothing to gain
    monkeypatch.setattr(replica_module, "MAX_REPLICA_BYTES", 1024)
    assert BF16Replica.build(base) is None
