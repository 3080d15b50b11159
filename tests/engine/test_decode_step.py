"""The decode step's own pieces on CPU: its attention against torch's, the merged q/k/v and
gate/up weights (LoRA merged in) and their refresh, and the Triton attention kernel in Triton's
interpreter."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from tests.tiny_models import TINY_SHAPE


def test_decode_attention_products_equal_torch_attention():
    from engine.generation.decoder import decode_attention

    torch.manual_seed(0)
    q, keys, values = torch.randn(3, 2, 7, 16), torch.randn(3, 2, 20, 16), torch.randn(3, 2, 20, 16)
    valid = torch.rand(3, 20) > 0.4
    valid[:, 0] = True  # every row sees at least one position, as a prompt guarantees
    valid[:, 15:] = False  # nothing written past the slot
    ours = decode_attention(q, keys, values, valid, torch.tensor([14]), 0.25)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q, keys, values, attn_mask=valid[:, None, None, :], scale=0.25
    )
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=1e-5)


def _qwen2_with_lora(targets):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    base = Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE, eos_token_id=1, pad_token_id=0))
    model = get_peft_model(base, LoraConfig(r=4, target_modules=targets))
    with torch.no_grad():  # a trained adapter: B is zero at init
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)
    return model.eval()


@pytest.mark.parametrize("targets", ["all-linear", ["q_proj", "up_proj"]])
def test_merged_decode_weights_give_the_logits_of_the_modules(targets):
    """q/k/v and gate/up as one matrix each, LoRA merged in: the same prefill and decode steps,
    also after the weights change in place (an optimizer step) and the copies are refreshed."""
    from engine.generation.cache import StaticKVCache
    from engine.generation.decode_weights import build_decode_weights
    from engine.generation.decoder import StaticDecoder

    model = _qwen2_with_lora(targets)
    decoder = StaticDecoder(model)
    s = decoder.shape
    weights = build_decode_weights(decoder.body.layers)
    assert weights is not None and weights.extra_bytes() > 0

    def step(merged):
        decoder.weights = weights if merged else None
        cache = StaticKVCache(s.num_layers, 2, s.kv_heads, 8, s.head_dim, torch.float32, "cpu")
        prompts = torch.tensor([[0, 3, 7, 2], [4, 6, 1, 8]])  # the first left-padded by one
        valid = torch.tensor([[False, True, True, True], [True, True, True, True]])
        rows = torch.tensor([0, 1])
        cached = torch.zeros(2, 8, dtype=torch.bool)
        cached[:, :4] = valid
        tokens, positions = torch.tensor([5, 9]), torch.tensor([3, 4])
        with torch.no_grad():
            prefilled = decoder.prefill(cache, prompts, valid, rows, rows)
            first = decoder.decode(cache, tokens, positions, torch.tensor([4]), cached)
            second = decoder.decode(cache, tokens + 1, positions + 1, torch.tensor([5]), cached)
        return torch.stack([prefilled, first, second])

    torch.testing.assert_close(step(True), step(False), atol=1e-5, rtol=1e-4)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_A" in name or "q_proj.base_layer.bias" in name:
                param.add_(torch.randn_like(param) * 0.1)
    stale = step(True)
    weights.refresh()
    torch.testing.assert_close(step(True), step(False), atol=1e-5, rtol=1e-4)
    for read_the_copies, fresh in zip(stale, step(False), strict=True):  # prefill, decodes
        assert not torch.allclose(read_the_copies, fresh, atol=1e-4)


@pytest.mark.parametrize("batched", [True, False])
def test_a_refresh_writes_each_modules_merged_weights(batched, monkeypatch):
    """Either refresh (batched: base weights copied at once, like adapters' B @ A in a batched
    product, groups split in chunks; or module by module) writes what merging each module
    writes: a bf16 model with float32 adapters, one projection with two active adapters, after
    the weights change and after an adapter is merged into its base."""
    from peft import LoraConfig, get_peft_model

    from engine.generation import decode_weights
    from engine.generation.decode_weights import _effective, build_decode_weights

    monkeypatch.setattr(decode_weights, "DELTA_CHUNK_BYTES", 9000)  # groups in several chunks
    torch.manual_seed(0)
    base = Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE)).to(torch.bfloat16)
    model = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear"))
    model.add_adapter("second", LoraConfig(r=2, target_modules=["q_proj"]))
    layers = model.get_base_model().model.layers
    layers[0].self_attn.q_proj.set_adapter(["default", "second"])
    weights = build_decode_weights(layers, batched=batched)
    assert weights is not None and weights.batched is batched

    def expected_and_copied():
        for copies in weights.layers:
            for projection in copies.projections():
                if projection.copied:
                    merged = [_effective(m)[0] for m in projection.modules]
                    yield torch.cat(merged), projection.weight

    def change_every_weight():
        with torch.no_grad():
            for param in model.parameters():
                param.add_(torch.randn_like(param) * 0.05)

    change_every_weight()
    weights.refresh()
    for expected, copied in expected_and_copied():
        torch.testing.assert_close(copied, expected, atol=0, rtol=2**-7)  # a bf16 rounding
    layers[1].mlp.up_proj.merge()  # its base now holds the adapter: added once, not twice
    change_every_weight()
    weights.refresh()
    for expected, copied in expected_and_copied():
        torch.testing.assert_close(copied, expected, atol=0, rtol=2**-7)


def test_decode_weights_are_not_built_where_they_do_not_apply(monkeypatch):
    from peft import LoraConfig, get_peft_model

    from engine.generation import decode_weights
    from engine.generation.decode_weights import build_decode_weights

    torch.manual_seed(0)
    plain = Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE))
    assert build_decode_weights(plain.model.layers) is not None
    dora = get_peft_model(
        Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE)),
        LoraConfig(r=4, target_modules=["v_proj"], use_dora=True),
    )
    assert build_decode_weights(dora.get_base_model().model.layers) is None
    monkeypatch.setattr(decode_weights, "MAX_COPY_BYTES", 1000)
    assert build_decode_weights(plain.model.layers) is None


@pytest.mark.parametrize(("group", "length", "first", "slot"), [(7, 130, 70, 100), (1, 64, 0, 63)])
def test_the_decode_attention_kernel_equals_the_products(monkeypatch, group, length, first, slot):
    """The Triton kernel in Triton's interpreter (on the CPU, float16), against the batched
    products in float32: a whole block of left padding, a hole, nothing read past the slot."""
    pytest.importorskip("triton")
    from engine.generation import attention_kernel
    from engine.generation.decoder import decode_attention

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    attention_kernel._kernel.cache_clear()
    torch.manual_seed(0)
    n, heads, dim = 2, 2, 32
    q = torch.randn(n, heads, group, dim).half()
    keys, values = (torch.randn(n, heads, length, dim).half() for _ in range(2))
    valid = torch.zeros(n, length, dtype=torch.bool)
    valid[:, first : slot + 1] = True
    valid[0, first + 3] = False
    keys[:, :, slot + 1 :] = float("nan")  # past the slot: must not be read
    out = torch.full_like(q, float("nan"))
    attention_kernel.launch(q, keys, values, valid, torch.tensor([slot]), 0.125, out)
    attention_kernel._kernel.cache_clear()
    k32, v32 = keys.float().nan_to_num(), values.float()
    reference = decode_attention(q.float(), k32, v32, valid, torch.tensor([slot]), 0.125)
    torch.testing.assert_close(out.float(), reference, atol=2e-3, rtol=2e-3)


def test_the_decode_compiles_one_block_for_every_block():
    """``torch.compile`` of :meth:`StaticDecoder.decode_layer` builds one graph that every
    block of the model runs (their weights and cache buffers are its inputs), and gives the
    eager decode's logits and cache; a deep model then compiles no longer than a shallow one."""
    from torch._dynamo.testing import CompileCounter

    from engine.generation.cache import StaticKVCache
    from engine.generation.decode_weights import build_decode_weights
    from engine.generation.decoder import StaticDecoder

    torch.manual_seed(0)
    shape = {**TINY_SHAPE, "num_hidden_layers": 6}
    decoder = StaticDecoder(Qwen2ForCausalLM(Qwen2Config(**shape)).eval())
    decoder.weights = build_decode_weights(decoder.body.layers)
    s = decoder.shape
    counter = CompileCounter()
    compiled = torch.compile(decoder.decode_layer, backend=counter, dynamic=False)

    def two_tokens(layer_step):
        cache = StaticKVCache(s.num_layers, 2, s.kv_heads, 8, s.head_dim, torch.float32, "cpu")
        valid = torch.zeros(2, 8, dtype=torch.bool)
        tokens, positions = torch.tensor([5, 9]), torch.tensor([0, 0])
        with torch.no_grad():
            logits = [
                decoder.decode(
                    cache, tokens + t, positions + t, torch.tensor([t]), valid, layer_step
                )
                for t in range(2)
            ]
        return torch.stack(logits), torch.stack(cache.keys), torch.stack(cache.values)

    for ours, eager in zip(two_tokens(compiled), two_tokens(None), strict=True):
        torch.testing.assert_close(ours, eager)
    assert counter.frame_count == 1  # 6 blocks x 2 tokens, one graph
