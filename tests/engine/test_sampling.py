"""Batched sampling on the shipped default model: shapes, reproducibility, truncation."""

from __future__ import annotations

import pytest

from engine.data.prompts import render_prompt
from engine.generation.sampling import sample_completions
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks import builtin_task

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default_model():
    return load_model_and_tokenizer(ModelSpec(), device="cpu")


@pytest.fixture(scope="module")
def prompts():
    return [r["prompt"] for r in builtin_task().eval_rows(3)]


def test_n_samples_per_prompt_in_order(default_model, prompts):
    model, tok = default_model
    out = sample_completions(model, tok, prompts, num_samples=4, max_new_tokens=96, seed=1)
    assert [(s.prompt_index, s.sample_index) for s in out] == [
        (i, j) for i in range(3) for j in range(4)
    ]
    for s in out:
        assert s.text == tok.decode(s.token_ids, skip_special_tokens=True)
        assert s.truncated == (tok.eos_token_id not in s.token_ids)
    assert sum(not s.truncated for s in out) >= 10  # the model ends its replies


def test_same_seed_same_samples_other_seed_differs(default_model, prompts):
    model, tok = default_model
    kwargs = {"num_samples": 4, "temperature": 1.0, "max_new_tokens": 48}
    a = sample_completions(model, tok, prompts, seed=7, **kwargs)
    b = sample_completions(model, tok, prompts, seed=7, **kwargs)
    c = sample_completions(model, tok, prompts, seed=8, **kwargs)
    assert [s.token_ids for s in a] == [s.token_ids for s in b]
    assert [s.text for s in a] != [s.text for s in c]


def test_truncation_flag_and_small_batches(default_model, prompts):
    model, tok = default_model
    out = sample_completions(model, tok, prompts, num_samples=2, max_new_tokens=5, batch_size=4)
    assert len(out) == 6
    assert all(s.truncated and len(s.token_ids) == 5 for s in out)


def test_greedy_is_deterministic_across_seeds(default_model, prompts):
    model, tok = default_model
    a = sample_completions(model, tok, prompts, temperature=0, max_new_tokens=40, seed=1)
    b = sample_completions(model, tok, prompts, temperature=0, max_new_tokens=40, seed=2)
    assert [s.text for s in a] == [s.text for s in b]


def test_prompt_rendering_and_argument_errors(default_model, prompts):
    model, tok = default_model
    text = render_prompt(tok, prompts[0])
    assert text.startswith("<|system|>") and text.endswith("<|end|><|assistant|>")
    assert render_prompt(tok, "raw text") == "raw text"
    with pytest.raises(ValueError, match=r"num_samples: must be a whole number in \[1, 64\]"):
        sample_completions(model, tok, prompts, num_samples=0)
    with pytest.raises(ValueError, match=r"top_p: must be in \(0, 1\]"):
        sample_completions(model, tok, prompts, top_p=0)
    with pytest.raises(ValueError, match="'role' and 'content'"):
        sample_completions(model, tok, [[{"text": "hi"}]])
    assert sample_completions(model, tok, []) == []
