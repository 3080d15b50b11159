"""Exports of a run's model: merged weights, GGUF read back by transformers, Ollama files."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel

from engine.config.run_config import RunConfig
from engine.exports.gguf_file import GGUFExportError, write_gguf
from engine.exports.run_export import ExportError, export_recorded_run
from engine.models.char_tokenizer import build_char_tokenizer
from engine.models.specs import DEFAULT_MODEL_DIR
from engine.run.saved_models import ADAPTER_CONFIG, load_run_model
from engine.runtime.devices import bounded_threads
from engine.tasks import builtin_task
from storage import runs as run_store
from storage.paths import db_path, runs_dir
from storage.sqlite.db import Database
from tests.in_process_run import train_tiny_llama

pytest.importorskip("gguf")

NUM_PROMPTS = 20
NEW_TOKENS = 24


@pytest.fixture(autouse=True)
def one_thread():
    # Tiny models run fastest on one torch thread, and more would oversubscribe a shared box.
    with bounded_threads(1):
        yield


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    """A tiny Llama trained 2 steps with LoRA: checkpoint-1 and final/ hold its adapter."""
    return train_tiny_llama(
        tmp_path_factory.mktemp("export-run"),
        "Tiny LoRA",
        model={"lora": {"r": 4, "alpha": 8}},
        save_total_limit=2,
        eval_samples=4,
        learning_rate=1e-2,
    )


def chat_prompts(tokenizer) -> list[str]:
    rows = builtin_task(0).train_rows(NUM_PROMPTS)
    return [
        tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
        for row in rows
    ]


def greedy(model, tokenizer, prompts: list[str]) -> tuple[list[str], torch.Tensor]:
    """Greedy completions of all prompts in one batch, and the logits at each prompt's end."""
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**batch).logits[:, -1]  # (B, V)
        out = model.generate(
            **batch, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
    width = batch.input_ids.shape[1]
    return tokenizer.batch_decode(out[:, width:], skip_special_tokens=True), logits


def load_gguf(path):
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    return model.eval(), tokenizer


def assert_round_trip(model, tokenizer, path) -> None:
    back, back_tokenizer = load_gguf(path)
    prompts = chat_prompts(tokenizer)
    for prompt in prompts:  # the tokenizer in the metadata splits text exactly as the original
        assert back_tokenizer(prompt).input_ids == tokenizer(prompt).input_ids
    assert back_tokenizer.chat_template == tokenizer.chat_template
    assert back_tokenizer.eos_token == tokenizer.eos_token
    texts, logits = greedy(model, tokenizer, prompts)
    back_texts, back_logits = greedy(back, back_tokenizer, prompts)
    assert back_texts == texts
    torch.testing.assert_close(back_logits, logits, atol=1e-2, rtol=0)


def test_default_model_round_trips_through_gguf_f16(tmp_path):
    model = AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL_DIR, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)
    path = write_gguf(model, tokenizer, tmp_path / "default-F16.gguf", "F16")
    assert_round_trip(model, tokenizer, path)


def test_merged_lora_run_round_trips_through_gguf_f16(lora_run, tmp_path):
    data_dir, run_id = lora_run
    run_dir = runs_dir(data_dir) / run_id
    assert (run_dir / "checkpoint-1" / ADAPTER_CONFIG).is_file()  # the merge path is exercised
    with Database(db_path(data_dir)) as db:
        merged = export_recorded_run(
            db, run_id, run_dir, tmp_path / "merged", "merged", model_key="checkpoint-1"
        )
        gguf = export_recorded_run(
            db, run_id, run_dir, tmp_path / "gguf", "gguf", model_key="checkpoint-1"
        )
    assert "config.json" in merged.files and "generation_config.json" in merged.files
    assert not any("adapter" in name for name in merged.files)
    model = AutoModelForCausalLM.from_pretrained(merged.folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(merged.folder)
    with Database(db_path(data_dir)) as db:
        config = RunConfig.from_dict(run_store.get_run(db, run_id).config)
    in_memory, _, _ = load_run_model(run_dir, "checkpoint-1", config=config)
    ids = tokenizer(chat_prompts(tokenizer)[0], return_tensors="pt").input_ids
    with torch.no_grad():  # the saved merge is the adapter applied to its base
        torch.testing.assert_close(model(ids).logits, in_memory(ids).logits)
    (gguf_file,) = [gguf.folder / f for f in gguf.files if f.endswith(".gguf")]
    assert gguf_file.name == "tiny-lora-F16.gguf"
    assert_round_trip(model, tokenizer, gguf_file)


@pytest.mark.reliability
def test_q8_0_loads_and_mostly_keeps_greedy_completions(tmp_path, record_property):
    model = AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL_DIR, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR)
    path = write_gguf(model, tokenizer, tmp_path / "default-Q8_0.gguf", "Q8_0")
    f16 = write_gguf(model, tokenizer, tmp_path / "default-F16.gguf", "F16")
    assert path.stat().st_size < f16.stat().st_size
    back, back_tokenizer = load_gguf(path)
    prompts = chat_prompts(tokenizer)
    texts, _ = greedy(model, tokenizer, prompts)
    back_texts, _ = greedy(back, back_tokenizer, prompts)
    share = sum(a == b for a, b in zip(texts, back_texts, strict=True)) / len(texts)
    record_property("q8_0_identical_greedy_share", share)
    record_property("q8_0_prompts", len(texts))
    assert share >= 0.5, (texts, back_texts)


def test_an_unsupported_architecture_is_refused_by_name(tmp_path):
    config = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=103, n_positions=32)
    model = GPT2LMHeadModel(config)
    model.config.architectures = ["GPT2LMHeadModel"]
    with pytest.raises(GGUFExportError, match=r"GPT2LMHeadModel \(model_type 'gpt2'\)"):
        write_gguf(model, build_char_tokenizer(), tmp_path / "x.gguf")
    assert not (tmp_path / "x.gguf").exists()


def test_ollama_export_writes_modelfile_card_and_command(lora_run, tmp_path, engine_cli):
    data_dir, run_id = lora_run
    out = tmp_path / "ollama"
    result = engine_cli(
        "export", run_id, out, "--format", "ollama", "--quant", "Q8_0", "--data-dir", data_dir
    )
    assert result.returncode == 0, result.stderr
    assert "ollama create tiny-lora -f Modelfile && ollama run tiny-lora" in result.stdout
    modelfile = (out / "Modelfile").read_text()
    assert modelfile.startswith("FROM ./tiny-lora-Q8_0.gguf\n")
    assert '{{- if eq .Role "system" }}<|system|>{{ .Content }}<|end|>' in modelfile
    assert 'PARAMETER stop "<|end|>"' in modelfile
    card = (out / "README.md").read_text()
    assert "LoRA adapter (r=4, alpha=8)" in card and "GRPO" in card
    assert "| accuracy |" in card  # held-out before and after, from the run's metrics
    assert "Steps: 2 of 2 planned" in card
    assert "ollama create tiny-lora" in card
    back, _ = load_gguf(out / "tiny-lora-Q8_0.gguf")
    assert back.config.num_hidden_layers == 2


def test_export_refuses_unknown_format_and_model_by_name(lora_run, tmp_path, engine_cli):
    data_dir, run_id = lora_run
    bad = engine_cli("export", run_id, tmp_path / "x", "--format", "onnx", "--data-dir", data_dir)
    assert bad.returncode == 2 and "--format" in bad.stderr and "onnx" in bad.stderr
    with Database(db_path(data_dir)) as db, pytest.raises(ExportError, match="checkpoint-9"):
        export_recorded_run(
            db, run_id, runs_dir(data_dir) / run_id, tmp_path / "y", "hf", model_key="checkpoint-9"
        )


def byte_level_tokenizer(split: str | None):
    """A small byte-level BPE trained here: GPT-2's pre-tokenizer, or ``split`` (a regex that
    llama.cpp names, like Qwen2's) in front of a regex-free ByteLevel."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split is None)
    core.pre_tokenizer = (
        byte_level
        if split is None
        else pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(split), behavior="isolated"), byte_level]
        )
    )
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(
        ["What is 12 + 30? The answer is 42.", "<think>1+2=3</think><answer>3</answer>"] * 20,
        trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    return tokenizer


@pytest.mark.parametrize("model_type", ["qwen2", "mistral"])
@pytest.mark.parametrize("split", [None, "qwen2"])
def test_qwen2_and_mistral_models_with_byte_level_bpe_round_trip(tmp_path, model_type, split):
    from transformers import AutoConfig
    from transformers.integrations.gguf.gguf_tokenizer_mapping import GGUF_PRE_TOKENIZER_SPLITS

    tokenizer = byte_level_tokenizer(split and GGUF_PRE_TOKENIZER_SPLITS[split])
    torch.manual_seed(0)
    config = AutoConfig.for_model(
        model_type,
        vocab_size=len(tokenizer) + 5,  # embedding rows no token uses, as real models have
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = AutoModelForCausalLM.from_config(config).eval()
    path = write_gguf(model, tokenizer, tmp_path / f"{model_type}.gguf")
    back, back_tokenizer = load_gguf(path)
    # Mistral is written as llama.cpp writes it, as a Llama (its q/k rows permuted and back).
    assert (
        type(back).__name__
        == {"qwen2": "Qwen2ForCausalLM", "mistral": "LlamaForCausalLM"}[model_type]
    )
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True
        )
        for q in ("What is 12 + 30?", "Hello   there, 2024 answers!", "<think>7+5</think>")
    ]
    for prompt in prompts:
        assert back_tokenizer(prompt).input_ids == tokenizer(prompt).input_ids
        assert back_tokenizer.decode(tokenizer(prompt).input_ids) == prompt
    _, logits = greedy(model, tokenizer, prompts)
    _, back_logits = greedy(back, back_tokenizer, prompts)
    torch.testing.assert_close(back_logits, logits, atol=1e-2, rtol=0)
    # A random model may pick an unused row, which the two tokenizers spell differently
    # ("" and "[PADn]"): compare the tokens it generates.
    ids = tokenizer(prompts[0], return_tensors="pt").input_ids
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)
        got = back.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)
    assert got.tolist() == want.tolist()


def test_hf_export_is_the_folder_as_trained_without_training_state(lora_run, tmp_path):
    from engine import model_commands
    from engine.exports.run_export import FORMATS

    assert model_commands.EXPORT_FORMATS == FORMATS  # the CLI's choices, kept free of torch imports
    data_dir, run_id = lora_run
    run_dir = runs_dir(data_dir) / run_id
    assert (run_dir / "checkpoint-1" / "optimizer.pt").is_file()
    with Database(db_path(data_dir)) as db:
        adapter = export_recorded_run(
            db, run_id, run_dir, tmp_path / "hf", "hf", model_key="checkpoint-1"
        )
        base = export_recorded_run(db, run_id, run_dir, tmp_path / "base", "hf", model_key="base")
    assert ADAPTER_CONFIG in adapter.files and "README.md" in adapter.files
    assert not {"optimizer.pt", "scheduler.pt", "trainer_state.json"} & set(adapter.files)
    assert "checkpoint at step 1" in (adapter.folder / "README.md").read_text()
    assert "config.json" in base.files and ADAPTER_CONFIG not in base.files


@pytest.mark.slow
def test_the_optional_english_model_round_trips_through_gguf_f16(tmp_path, english_model):
    """A real byte-level BPE model (SmolLM2-135M-Instruct, a Llama): the tokenizer and chat
    template come back exactly, greedy tokens agree, logits within F16's rounding."""
    model, tokenizer = english_model  # float32 on the CPU
    assert next(model.parameters()).dtype == torch.float32
    path = write_gguf(model.eval(), tokenizer, tmp_path / "smollm2-F16.gguf")
    back, back_tokenizer = load_gguf(path)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 17 + 25? Say it   twice."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert back_tokenizer(prompt).input_ids == tokenizer(prompt).input_ids
    assert back_tokenizer.chat_template == tokenizer.chat_template
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        torch.testing.assert_close(back(ids).logits, model(ids).logits, atol=0.1, rtol=0)
        want = model.generate(ids, max_new_tokens=12, do_sample=False)
        got = back.generate(ids, max_new_tokens=12, do_sample=False)
    assert got.tolist() == want.tolist()
