"""The update's packed rows give TRL's log-probabilities and gradients, row for row."""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM
from trl.trainer.utils import add_fused_lm_head

from engine.trainers.compiled_layers import COMPILED_LENGTH_MULTIPLE
from engine.trainers.trl.shared_prompt import (
    SHARE_ENV,
    logps_with_shared_prompts,
    pack_rows,
    packed_attention_mask,
    shares_prompts,
)

PROMPT, COMPLETION = 7, 5


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    config._attn_implementation = "sdpa"
    base = LlamaForCausalLM(config)
    add_fused_lm_head(base, temperature=0.8, outputs=("log_probs", "entropy"))
    # LoRA on the last two layers only, as the CPU suggestion trains (random B: gradients flow)
    lora = LoraConfig(
        r=4, target_modules=["q_proj", "v_proj", "down_proj"], layers_to_transform=[1, 2]
    )
    lora.init_lora_weights = False
    return get_peft_model(base, lora).train()


def batch(groups: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows of two prompts (the second left-padded) in the order ``groups`` gives, each with
    its own completion, some right-padded, one with a masked token inside (a tool result) and
    the last one empty: ids, attention mask, completion mask."""
    generator = torch.Generator().manual_seed(1)
    prompts = torch.randint(3, 50, (2, PROMPT), generator=generator)
    prompt_mask = torch.ones(2, PROMPT, dtype=torch.long)
    prompts[1, :3], prompt_mask[1, :3] = 0, 0
    rows = len(groups)
    completions = torch.randint(3, 50, (rows, COMPLETION), generator=generator)
    completion_mask = torch.ones(rows, COMPLETION, dtype=torch.long)
    completion_mask[1, 3:] = completion_mask[rows - 2, 2:] = 0
    completion_mask[0, 1] = completion_mask[rows - 1] = 0
    order = torch.tensor(groups)
    ids = torch.cat([prompts[order], completions], dim=1)
    return ids, torch.cat([prompt_mask[order], completion_mask], dim=1), completion_mask


def trl_forward(model, ids, mask):
    """TRL 1.16's loss forward (``GRPOTrainer._get_per_token_logps_and_entropies``)."""
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-COMPLETION] = -100
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    return out.log_probs[:, -COMPLETION:], out.entropy[:, -COMPLETION:]


def gradients(model, logps, completion_mask) -> dict[str, torch.Tensor]:
    model.zero_grad()
    (logps * completion_mask).sum().backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_shared_prompts_give_trls_log_probs_and_gradients(model):
    ids, mask, completion_mask = batch([0, 1, 0, 1, 1, 0])  # TRL shuffles a step's rows
    expected_logps, expected_entropy = trl_forward(model, ids, mask)
    expected = gradients(model, expected_logps, completion_mask)
    logps, entropy, aux = logps_with_shared_prompts(model, ids, mask, COMPLETION, True)
    got = gradients(model, logps, completion_mask)
    kept = completion_mask.bool()
    torch.testing.assert_close(logps[kept], expected_logps[kept], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropy[kept], expected_entropy[kept], atol=1e-5, rtol=1e-5)
    assert aux is None and expected.keys() == got.keys() and len(got) == 12  # 3 modules x A, B x 2
    for name, grad in expected.items():
        torch.testing.assert_close(got[name], grad, atol=1e-5, rtol=1e-4)


def test_each_prompt_is_packed_once_with_no_closed_mask_row():
    ids, mask, _ = batch([0, 1, 0, 1, 1, 0])
    packed = pack_rows(ids, mask, COMPLETION)
    prompts, width = packed.input_ids.shape
    assert prompts == 2 and width % COMPILED_LENGTH_MULTIPLE == 0
    real = packed.segment >= 0
    # each prompt's kept tokens but its last once, then 1 + the completion's span per row
    assert real.sum() == (PROMPT - 1) + (PROMPT - 1 - 3) + 6 + (5 + 3 + 5 + 5 + 2 + 0)
    assert packed_attention_mask(packed).any(-1).all()


def test_rows_without_a_shared_prompt_are_left_to_trl(model):
    ids, mask, _ = batch([0, 1])
    assert logps_with_shared_prompts(model, ids, mask, COMPLETION, False) is None


def test_shared_only_for_text_under_sdpa_on_the_cpu_when_trl_does_not_chunk(monkeypatch):
    ids = torch.zeros(6, 12, dtype=torch.long)
    text = {"compute_entropy": True, "pixel_values": None}
    assert shares_prompts("sdpa", ids, None, text)
    assert not shares_prompts("sdpa", ids, 2, text)  # TRL chunks the rows itself
    assert not shares_prompts("eager", ids, None, text)  # would add the boolean mask as numbers
    assert not shares_prompts("sdpa", ids, None, {**text, "pixel_values": torch.zeros(1)})
    assert not shares_prompts("sdpa", ids, None, {**text, "compute_aux_loss": True})
    assert not shares_prompts("sdpa", ids.to("meta"), None, text)  # a GPU runs TRL's rows
    monkeypatch.setenv(SHARE_ENV, "0")
    assert not shares_prompts("sdpa", ids, None, text)
