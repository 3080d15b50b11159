"""A LoRA run's final model is its adapter and a pointer to its base (issue 42): it loads in the
Playground's loader and as a model folder, exports merged and as GGUF with the greedy
completions of the merge the run used to save, and folders saved the old way still load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from engine.config.run_config import RunConfig
from engine.exports.gguf_file import write_gguf
from engine.exports.hub import merged_folder
from engine.exports.run_export import export_recorded_run
from engine.models.adapters import ADAPTER_WEIGHTS, BASE_POINTER, attach_adapter
from engine.models.char_tokenizer import build_char_tokenizer
from engine.models.loading import load_model_and_tokenizer, parameter_count
from engine.models.saving import save_plain_weights
from engine.models.specs import ModelSpec
from engine.run.preflight import check_model
from engine.run.saved_models import ADAPTER_CONFIG, load_run_model
from engine.runtime.devices import bounded_threads
from storage.paths import db_path, runs_dir
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.engine.test_export_model import chat_prompts, greedy, load_gguf
from tests.in_process_run import run_in_process
from tests.tiny_models import save_tiny_llama

pytest.importorskip("gguf")


@pytest.fixture(autouse=True)
def one_thread():
    with bounded_threads(1):
        yield


def lora_config(model_dir, **training) -> RunConfig:
    """2 LoRA steps on a tiny Llama, rewarded for a vowel: random text has one about half the
    time, so the groups' rewards differ and the adapter moves."""
    return RunConfig.from_dict(
        {
            "name": "Tiny LoRA final",
            "model": {"name_or_path": str(model_dir), "lora": {"r": 4, "alpha": 8}},
            "reward": {
                "components": [
                    {
                        "name": "rule",
                        "weight": 1.0,
                        "params": {"pattern": "[aeiou]", "kind": "must_contain"},
                    }
                ]
            },
            "generation": {"num_generations": 4, "max_completion_length": 8},
            "training": {
                "steps": 2,
                "prompts_per_step": 2,
                "save_steps": 1,
                "samples_per_log": 4,
                "learning_rate": 5e-2,
                **training,
            },
        }
    )


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora-final")
    model_dir = save_tiny_llama(root / "tiny", build_char_tokenizer())
    config = lora_config(model_dir)
    data_dir = root / "data"
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    return data_dir, run_id, runs_dir(data_dir) / run_id, config


def attached(final, config):
    """The reference: the run's base with the final adapter attached, not merged."""
    base, tokenizer = load_model_and_tokenizer(
        ModelSpec(config.model.name_or_path, dtype="float32"), device="cpu"
    )
    return attach_adapter(base, final, merge=False).eval(), tokenizer


def test_the_final_folder_holds_the_adapter_and_its_base_not_full_weights(lora_run):
    _, _, run_dir, config = lora_run
    final = run_dir / "final"
    names = {p.name for p in final.iterdir()}
    assert {ADAPTER_WEIGHTS, ADAPTER_CONFIG, BASE_POINTER, "tokenizer.json"} <= names
    assert not any(n.startswith("model") and n.endswith(".safetensors") for n in names)
    pointer = json.loads((final / BASE_POINTER).read_text())
    assert pointer["name_or_path"] == config.model.name_or_path
    assert pointer["config_sha256"] and pointer["gguf_file"] is None
    base_weights = (Path(config.model.name_or_path) / "model.safetensors").stat().st_size
    assert (final / ADAPTER_WEIGHTS).stat().st_size < base_weights / 4


def test_the_playground_loader_merges_the_adapter(lora_run):
    _, _, run_dir, config = lora_run
    final = run_dir / "final"
    reference, tokenizer = attached(final, config)
    prompts = chat_prompts(tokenizer)
    want, want_logits = greedy(reference, tokenizer, prompts)
    base, _ = load_model_and_tokenizer(ModelSpec(config.model.name_or_path, dtype="float32"))
    base_texts, _ = greedy(base.eval(), tokenizer, prompts)
    assert want != base_texts  # the adapter changes what the model says
    model, tok, which = load_run_model(run_dir, "final", config=config)
    assert which.key == "final" and not any("lora" in n for n, _ in model.named_parameters())
    got, logits = greedy(model, tok, prompts)
    assert got == want
    torch.testing.assert_close(logits, want_logits, atol=1e-5, rtol=1e-5)
    # As a model folder (the Preview, a new run starting from it): the same merge.
    folder_model, folder_tok = load_model_and_tokenizer(
        ModelSpec(str(final), dtype="float32"), device="cpu"
    )
    assert greedy(folder_model.eval(), folder_tok, prompts)[0] == want
    assert parameter_count(ModelSpec(str(final))) == parameter_count(config.model)
    check_model(ModelSpec(str(final)))  # the preflight takes it as a model


def test_exports_merge_it_with_the_old_merged_models_completions(lora_run, tmp_path):
    data_dir, run_id, run_dir, config = lora_run
    final = run_dir / "final"
    reference, tokenizer = attached(final, config)
    # What the run saved before issue 42: a deep copy of the trained model, merged.
    old = tmp_path / "old-merged"
    save_plain_weights(reference, tokenizer, old)
    old_model = AutoModelForCausalLM.from_pretrained(old, dtype=torch.float32).eval()
    prompts = chat_prompts(tokenizer)
    want, _ = greedy(old_model, tokenizer, prompts)
    assert want == greedy(reference, tokenizer, prompts)[0]
    with Database(db_path(data_dir)) as db:
        merged = export_recorded_run(db, run_id, run_dir, tmp_path / "m", "merged")
        gguf = export_recorded_run(db, run_id, run_dir, tmp_path / "g", "gguf")
    assert "model.safetensors" in merged.files and ADAPTER_CONFIG not in merged.files
    model = AutoModelForCausalLM.from_pretrained(merged.folder, dtype=torch.float32).eval()
    assert greedy(model, AutoTokenizer.from_pretrained(merged.folder), prompts)[0] == want
    # GGUF: F16 rounds the weights, so the reference is the old merge written as F16 GGUF.
    (gguf_file,) = [gguf.folder / f for f in gguf.files if f.endswith(".gguf")]
    old_gguf = write_gguf(old_model, tokenizer, tmp_path / "old.gguf", "F16")
    back, back_tokenizer = load_gguf(gguf_file)
    old_back, _ = load_gguf(old_gguf)
    texts, logits = greedy(back, back_tokenizer, prompts)
    old_texts, old_logits = greedy(old_back, back_tokenizer, prompts)
    assert texts == old_texts
    torch.testing.assert_close(logits, old_logits)


def test_a_final_folder_saved_the_old_way_still_loads(lora_run, tmp_path):
    _, _, run_dir, config = lora_run
    reference, tokenizer = attached(run_dir / "final", config)
    old_run = tmp_path / "old-run"
    shutil.copytree(run_dir, old_run, ignore=shutil.ignore_patterns("final"))
    save_plain_weights(reference, tokenizer, old_run / "final")  # full merged weights
    model, tok, which = load_run_model(old_run, "latest", config=config)
    assert which.key == "final"
    prompts = chat_prompts(tok)
    assert greedy(model, tok, prompts)[0] == greedy(reference, tokenizer, prompts)[0]


def test_a_hub_push_merged_uploads_the_merge_and_otherwise_the_adapter(lora_run, tmp_path):
    _, _, run_dir, config = lora_run
    final = run_dir / "final"
    reference, tokenizer = attached(final, config)
    folder = merged_folder(final, tmp_path / "push")
    assert (folder / "model.safetensors").is_file() and not (folder / ADAPTER_CONFIG).exists()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    prompts = chat_prompts(tokenizer)
    assert greedy(model, tokenizer, prompts)[0] == greedy(reference, tokenizer, prompts)[0]
    plain = tmp_path / "plain"
    save_plain_weights(reference, tokenizer, plain)
    assert merged_folder(plain, tmp_path / "unused") == plain  # nothing to merge


def test_a_ppo_lora_run_saves_its_adapter_too(tmp_path):
    from engine.models.specs import LoraSpec
    from engine.run.final_model import save_final
    from tests.engine.test_ppo_trainer import make_trainer, tiny_run_config

    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    config = tiny_run_config(model_dir, entropy_coef=0.5)  # entropy moves a random model
    config.training.steps, config.training.save_steps = 1, 0
    trainer = make_trainer(config, tmp_path / "run", lora=LoraSpec(r=4, alpha=8))
    assert trainer.train() == RunStatus.COMPLETED
    save_final(  # as the worker does after train()
        trainer.accelerator, trainer.policy, trainer.tokenizer, trainer.run_dir, config.model,
        trainer.recorder, trainer.last_step,
    )  # fmt: skip
    final = tmp_path / "run" / "final"
    assert {ADAPTER_WEIGHTS, ADAPTER_CONFIG, BASE_POINTER} <= {p.name for p in final.iterdir()}
    assert not (final / "model.safetensors").exists()
    reference = attach_adapter(
        load_model_and_tokenizer(ModelSpec(str(model_dir), dtype="float32"), device="cpu")[0],
        final,
        merge=False,
    ).eval()
    model, tokenizer = load_model_and_tokenizer(ModelSpec(str(final), dtype="float32"))
    prompts = chat_prompts(tokenizer)
    assert greedy(model.eval(), tokenizer, prompts)[0] == greedy(reference, tokenizer, prompts)[0]
