"""The peak-memory estimate against figures computed by hand for a tiny Llama shape."""

from __future__ import annotations

import pytest
from transformers import LlamaConfig

from engine.config.run_config import RunConfig
from engine.models.shape import model_shape
from engine.models.specs import LoraSpec, ModelSpec
from engine.planning.memory import estimate, size
from engine.planning.micro_batch import (
    describe,
    fitting_micro_batch,
    longest_prompt,
    with_default_micro_batch,
)

# hidden 16, intermediate 32, 2 layers, 4 heads of dim 4, 2 key-value heads, vocabulary 100.
# Parameters: embeddings 1,600; per layer q 256 + k 128 + v 128 + o 256 + gate/up/down 3 x 512
# + two norms 32 = 2,336; final norm 16; untied head 1,600: 1,600 + 2 x 2,336 + 16 + 1,600.
PARAMS = 7888
LINEAR = 2 * 2304  # the layers' linear weights, head excluded


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("shape")
    LlamaConfig(
        vocab_size=100,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    ).save_pretrained(path)  # the config alone: nothing else is read
    return path


def config(model_dir, algorithm="grpo", lora=None, four_bit=False, **sections) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "model": {"name_or_path": str(model_dir), "lora": lora, "load_in_4bit": four_bit},
            "generation": {"num_generations": 4, "max_completion_length": 10},
            "training": {"prompts_per_step": 2, "micro_batch_size": 4},
            **sections,
        }
    )


def test_shape_is_read_from_the_config_alone(model_dir):
    shape = model_shape(ModelSpec(str(model_dir)))
    assert (shape.parameters, shape.linear_parameters, shape.lora_parameters) == (
        PARAMS,
        LINEAR,
        0,
    )
    assert (shape.layers, shape.hidden, shape.intermediate) == (2, 16, 32)
    assert (shape.kv_heads, shape.head_dim, shape.vocab) == (2, 4, 100)
    # LoRA r=2 on every linear layer: r x (in + out) per layer; q 32, k 24, v 24, o 32,
    # gate 48, up 48, down 48 -> 2 x 256 x 2.
    lora = model_shape(ModelSpec(str(model_dir), lora=LoraSpec(r=2)))
    assert lora.lora_parameters == 1024
    only_q = model_shape(ModelSpec(str(model_dir), lora=LoraSpec(r=2, target_modules=["q_proj"])))
    assert only_q.lora_parameters == 2 * 2 * 32
    assert model_shape(ModelSpec("/no/such/model")) is None


def hand_lm_head(completion_tokens: int, hidden: int = 16, vocab: int = 100) -> int:
    """The fused head's backward by hand: a 4096 x 32768 bf16 tile, per completion token the
    float32 hidden-state gradient, its bf16 cast and the saved copy, and the head's float32
    weight gradient with its bf16 cast."""
    return 4096 * 32768 * 2 + completion_tokens * hidden * (4 + 2 + 2) + vocab * hidden * (4 + 2)


def update_of(est) -> int:
    t = est.terms
    return t["gradients"] + t["activations"] + t["lm_head"] + t["logits"] + t["margin"]


def test_full_fine_tune_terms_by_hand(model_dir, monkeypatch):
    monkeypatch.delenv("STUDIO_COMPILE_LAYERS", raising=False)
    c = config(model_dir)
    est = estimate(c, model_shape(c.model), prompt_tokens=6)  # bf16; 6 + 10 = 16 positions
    # compiled layers (one process on a GPU): layers x (16 h + 6 I) bytes x micro-batch 4 x 16
    activations = 2 * (16 * 16 + 6 * 32) * 4 * 16
    lm_head = hand_lm_head(4 * 10)  # micro-batch 4 x 10 completion tokens
    assert est.terms == {
        "weights": PARAMS * 2,
        "optimizer": 2 * PARAMS * 2,  # AdamW's two moments in bf16
        "gradients": PARAMS * 2,
        "optimizer_step": 0,  # TRL's fused AdamW
        "ddp_buckets": 0,
        "fsdp_gathered": 0,
        "activations": activations,
        "lora_inputs": 0,
        "lm_head": lm_head,
        "logits": 0,  # the fused head builds none
        # layers 2 x (K, V) x 2 kv heads x dim 4 x 2 bytes x 8 completions x 74 positions: the
        # static-cache sampler (backend auto on a GPU) rounds the 6 prompt tokens up to 64;
        # plus its merged q/k/v (16 x (16 + 2 x 8)) and gate/up (2 x 16 x 32) per layer, bf16
        "kv_cache": 2 * 2 * 2 * 4 * 2 * 8 * 74 + 2 * (16 * 32 + 2 * 16 * 32) * 2,
        "generation_gather": 0,  # one process: nothing to gather
        "reference": 0,
        "value_model": 0,
        "margin": int(0.15 * (activations + lm_head)),
    }
    # the static cache stays allocated through the update
    assert est.peak == PARAMS * 2 * 3 + est.terms["kv_cache"] + update_of(est)
    assert est.compiled_layers and est.biggest == "lm_head"  # a tiny model: the tile dominates
    assert "lower it with training.micro_batch_size" in est.summary()
    cpu = estimate(c, model_shape(c.model), on_gpu=False, prompt_tokens=6)
    assert cpu.terms["weights"] == PARAMS * 4 and cpu.dtype == "float32"
    assert not cpu.compiled_layers
    # eager layers keep the RMSNorms' float32 inputs and the SiLU output: 24 h + 8 I
    monkeypatch.setenv("STUDIO_COMPILE_LAYERS", "0")
    eager = estimate(c, model_shape(c.model), prompt_tokens=6)
    assert eager.terms["activations"] == 2 * (24 * 16 + 8 * 32) * 4 * 16


def test_transformers_generate_frees_its_cache_before_the_update(model_dir):
    hf = config(
        model_dir, generation={"num_generations": 4, "max_completion_length": 10, "backend": "hf"}
    )
    est = estimate(hf, model_shape(hf.model), prompt_tokens=6)
    assert est.terms["kv_cache"] == 2 * 2 * 2 * 4 * 2 * 8 * 16  # no bucket: 6 + 10 positions
    assert est.peak == PARAMS * 2 * 3 + max(est.terms["kv_cache"], update_of(est))
    compiled = config(
        model_dir,
        generation={"num_generations": 4, "max_completion_length": 10, "backend": "compiled"},
    )
    static = estimate(compiled, model_shape(compiled.model), prompt_tokens=6)
    assert static.peak == PARAMS * 2 * 3 + static.terms["kv_cache"] + update_of(est)
    cpu = estimate(compiled, model_shape(compiled.model), on_gpu=False, prompt_tokens=6)
    assert cpu.static_cache  # the static-cache sampler runs on a CPU too
    assert not estimate(hf, model_shape(hf.model), on_gpu=False, prompt_tokens=6).static_cache


def test_lora_four_bit_reference_and_separate_critic(model_dir):
    lora = config(model_dir, lora={"r": 2, "alpha": 4})
    est = estimate(lora, model_shape(lora.model))
    assert est.terms["optimizer"] == 2 * 1024 * 4  # fp32 adapters
    assert est.terms["gradients"] == 1024 * 4
    quant = config(model_dir, four_bit=True)
    est = estimate(quant, model_shape(quant.model))
    # the rest float32: peft's prepare_model_for_kbit_training casts it
    assert est.terms["weights"] == int(LINEAR * 4.127 / 8) + (PARAMS - LINEAR) * 4
    ppo = config(model_dir, "ppo", ppo={"value_model": "separate", "num_minibatches": 1})
    est = estimate(ppo, model_shape(ppo.model))
    assert est.terms["reference"] == PARAMS * 2  # kl_coef 0.05: a frozen copy
    assert est.terms["value_model"] == 4 * PARAMS * 2
    grpo_kl = config(model_dir, grpo={"beta": 0.1}, lora={"r": 2, "alpha": 4})
    assert estimate(grpo_kl, model_shape(grpo_kl.model)).terms["reference"] == 0  # adapters off


@pytest.mark.parametrize("compile_layers", ["1", "0"])
def test_four_bit_terms_by_hand(model_dir, monkeypatch, compile_layers):
    """QLoRA (engine/planning/memory.py, "4-bit"): a float32 residual stream whose layers keep
    14 I + 24 h bytes per token, measured on one H200 at two shapes (bench/RESULTS.md, issue
    42), compiled or not (the layers do not compile over Linear4bit); transformers' generate."""
    monkeypatch.setenv("STUDIO_COMPILE_LAYERS", compile_layers)
    c = config(model_dir, lora={"r": 2, "alpha": 4}, four_bit=True)
    est = estimate(c, model_shape(c.model), prompt_tokens=6)
    # 2 layers x (14 x I 32 + 24 x h 16) bytes x micro-batch 4 x 16 positions
    activations = 2 * (14 * 32 + 24 * 16) * 4 * 16
    # the fused head's tile, float32 hidden-state gradients, their copy and cast, all float32
    lm_head = 4096 * 32768 * 4 + 4 * 10 * 16 * (4 + 4 + 4)
    # layers 2 x (K, V) x 2 kv heads x dim 4 x float32 x 8 completions x 16 positions (no bucket)
    kv_cache = 2 * 2 * 2 * 4 * 4 * 8 * 16
    t = est.terms
    assert t["activations"] == activations
    assert t["lora_inputs"] == 0  # counted in the activations; dropout 0 keeps no masks
    assert t["lm_head"] == lm_head and t["kv_cache"] == kv_cache
    assert t["margin"] == int(0.15 * (activations + lm_head))
    assert not est.static_cache  # the cache is freed before the update
    assert est.peak == est.persistent + max(kv_cache, update_of(est))
    dropout = config(model_dir, lora={"r": 2, "alpha": 4, "dropout": 0.1}, four_bit=True)
    masks = estimate(dropout, model_shape(dropout.model), prompt_tokens=6).terms["lora_inputs"]
    assert masks == 2 * (6 * 16 + 32) * 4 * 16  # 1 byte per adapted input feature
    checkpointed = config(
        model_dir,
        lora={"r": 2, "alpha": 4},
        four_bit=True,
        training={"prompts_per_step": 2, "micro_batch_size": 4, "activation_checkpointing": True},
    )
    kept = estimate(checkpointed, model_shape(checkpointed.model), prompt_tokens=6)
    # each layer's float32 input, plus one layer's set while it is recomputed
    assert kept.terms["activations"] == (2 * 16 * 4 + (14 * 32 + 24 * 16)) * 4 * 16


def test_default_micro_batch_is_the_largest_that_fits_the_card(model_dir):
    c = config(model_dir)
    shape = model_shape(c.model)
    fits_4 = estimate(c, shape, micro_batch=4).peak
    assert fitting_micro_batch(c, shape, fits_4) == 4
    assert fitting_micro_batch(c, shape, fits_4 - 1) == 2
    assert fitting_micro_batch(c, shape, 10**12) == 8
    assert fitting_micro_batch(c, shape, 1) == 1
    empty = RunConfig.from_dict({**c.to_dict(), "training": {"prompts_per_step": 2}})
    assert with_default_micro_batch(empty, int(fits_4 / 0.8) + 1).training.micro_batch_size == 4
    assert with_default_micro_batch(c, 1).training.micro_batch_size == 4  # the user's choice


def test_a_default_05b_run_at_256_by_256_fits_an_80_gib_card(qwen05b):
    """Qwen2.5-0.5B's shape, 32 prompts x 8 completions x 256 tokens: the picked micro-batch
    keeps the estimate inside the card."""
    from engine.models.shape import shape_of
    from engine.planning.memory import CARD_BUDGET, GIB

    for algorithm in ("grpo", "ppo"):
        c = RunConfig.from_dict(
            {
                "algorithm": algorithm,
                "generation": {"num_generations": 8, "max_completion_length": 256},
                "training": {"prompts_per_step": 32},
            }
        )
        shape = shape_of(qwen05b, c.model)
        assert shape.parameters == 494_032_768
        assert estimate(c, shape).peak > 80 * GIB  # the whole step at once would not fit
        size = fitting_micro_batch(c, shape, CARD_BUDGET * 80 * GIB)
        assert 8 <= size < 256
        assert estimate(c, shape, micro_batch=size).peak <= CARD_BUDGET * 80 * GIB


def test_cli_estimate_prints_the_line(model_dir, tmp_path, engine_cli):
    path = config(model_dir).save(tmp_path / "run.yaml")
    out = engine_cli("estimate", path, "--card-gib", "80")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Estimated peak memory per device:")
    assert "bfloat16, micro-batches of 4" in out.stdout
    bad = engine_cli("estimate", path, "--card-gib", "zero")
    assert bad.returncode == 2 and "--card-gib: must be a number of GiB > 0" in bad.stderr


def test_activation_checkpointing_keeps_only_layer_inputs(model_dir):
    c = RunConfig.from_dict(
        {**config(model_dir).to_dict(), "training": {"prompts_per_step": 2, "micro_batch_size": 4}}
    )
    c.training.activation_checkpointing = True
    est = estimate(c, model_shape(c.model), prompt_tokens=6)
    # (layers 2 x h 16 x 2 bytes + one layer's 16 h + 6 I = 448 bytes) x micro-batch 4 x 16
    assert est.terms["activations"] == (2 * 16 * 2 + 448) * 4 * 16


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_a_step_trains_with_activation_checkpointing(data_dir, algorithm):
    from storage.sqlite.schema import RunStatus
    from tests.in_process_run import run_in_process

    c = RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {
                "steps": 1,
                "prompts_per_step": 2,
                "save_steps": 0,
                "eval_samples": 0,
                "activation_checkpointing": True,
            },
        }
    )
    _, status = run_in_process(data_dir, c)
    assert status == RunStatus.COMPLETED


def test_the_pick_follows_the_prompts_length(model_dir):
    """The worker sizes the micro-batch for the data's longest prompt: longer prompts, a
    smaller micro-batch; the line says which length it used."""
    c = config(model_dir)
    shape = model_shape(c.model)
    budget = estimate(c, shape, micro_batch=4, prompt_tokens=6).peak
    assert fitting_micro_batch(c, shape, budget, prompt_tokens=6) == 4
    assert fitting_micro_batch(c, shape, budget, prompt_tokens=60) < 4
    empty = RunConfig.from_dict({**c.to_dict(), "training": {"prompts_per_step": 2}})
    card = int(budget / 0.8) + 1
    assert with_default_micro_batch(empty, card, 6).training.micro_batch_size == 4
    assert with_default_micro_batch(empty, card, 60).training.micro_batch_size < 4
    assert describe(empty, card, 6).endswith(f"fit 80% of the {size(card)} card.")
    assert "Prompts of 6 tokens." in describe(empty, card, 6)
    assert "Prompts of 128 tokens assumed." in describe(empty, card)


def test_longest_prompt_is_read_as_the_model_reads_it():
    from engine.generation.sampling import encode_prompts
    from engine.models.char_tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    rows = [
        {"prompt": [{"role": "user", "content": "What is 2 plus 3?"}]},
        {"prompt": [{"role": "user", "content": "What is 12 plus 30, and then minus 7?"}]},
    ]
    lengths = [len(ids) for ids in encode_prompts(tokenizer, [r["prompt"] for r in rows])]
    assert longest_prompt(tokenizer, rows) == max(lengths) > min(lengths)
    assert longest_prompt(tokenizer, []) == 128  # no rows: the assumed length
