"""Held-out evaluation, and the shipped model's quality window."""

from __future__ import annotations

import json

import pytest
from transformers import LlamaForCausalLM

from engine.builds.build_default_model import BuildConfig, model_config
from engine.generation.settings import SamplingSettings
from engine.models.char_tokenizer import build_char_tokenizer
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import DEFAULT_MODEL_DIR, ModelSpec
from engine.tasks import builtin_task
from engine.tracking.evaluation import evaluate, score_texts

# The window the default model is built for: sampled at T=0.8 on the held-out split.
ACCURACY_WINDOW = (0.15, 0.60)
FORMAT_WINDOW = (0.40, 0.95)
# What it reads in phrasing families it was never trained on: (accuracy, strict format) floors.
UNSEEN_PHRASINGS_FLOOR = (0.25, 0.60)


def test_scores_come_from_the_reward_components():
    texts = [
        "<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>",
        "<think>86-62: 6-2=4; 8-6=2; so 24</think>The answer is 24.",
        "<answer>25</answer>",
        "<think>x</think><answer>25</answer>",
    ]
    correct, strict = score_texts(texts, ["24"] * 4)
    assert correct == [1.0, 1.0, 0.0, 0.0]
    assert strict == [True, False, False, True]


@pytest.fixture(scope="module")
def default_model():
    return load_model_and_tokenizer(ModelSpec(), device="cpu")


@pytest.mark.slow
def test_shipped_model_meets_the_quality_window(default_model):
    """The model card's evaluation, rerun: same rows (400), seed (0) and sampling settings."""
    model, tok = default_model
    info = json.loads((DEFAULT_MODEL_DIR / "build_info.json").read_text())
    recorded = info["eval"]
    rows = builtin_task(info["config"]["seed"]).eval_rows(recorded["n"])
    report = evaluate(model, tok, rows, SamplingSettings(num_samples=1))
    assert report.n == 400
    assert ACCURACY_WINDOW[0] <= report.accuracy <= ACCURACY_WINDOW[1]
    assert FORMAT_WINDOW[0] <= report.format_rate <= FORMAT_WINDOW[1]
    # The card's numbers are honest: a rerun lands within sampling-noise distance of them.
    assert abs(report.accuracy - recorded["accuracy"]) <= 0.05
    assert abs(report.format_rate - recorded["format_rate"]) <= 0.05
    assert set(report.by_difficulty) == {"1", "2", "3", "4"}
    assert report.strict_accuracy <= report.accuracy


@pytest.mark.slow
def test_shipped_model_reads_phrasings_it_was_never_trained_on(default_model):
    """The card's evaluation on the held-out phrasing families, rerun on its first 200 rows:
    at least 25% right and 60% in strict format, as recorded on the card."""
    model, tok = default_model
    info = json.loads((DEFAULT_MODEL_DIR / "build_info.json").read_text())
    recorded = info["evals"]["unseen_phrasings"]
    rows = builtin_task(info["config"]["seed"]).unseen_phrasing_rows(recorded["n"])[:200]
    report = evaluate(model, tok, rows, SamplingSettings(num_samples=1))
    assert report.accuracy >= UNSEEN_PHRASINGS_FLOOR[0]
    assert report.format_rate >= UNSEEN_PHRASINGS_FLOOR[1]
    assert recorded["accuracy"] >= UNSEEN_PHRASINGS_FLOOR[0]
    assert recorded["format_rate"] >= UNSEEN_PHRASINGS_FLOOR[1]
    # RL headroom: on the built-in templates, one sample is far below pass@8.
    multi = info["evals"]["builtin_pass_at_k"]
    assert multi["num_samples"] == 8 and multi["pass_at_k"] >= info["eval"]["accuracy"] + 0.2


@pytest.mark.slow
def test_a_random_model_fails_the_window():
    """The window check can fail: an untrained model of the same shape is far outside it."""
    tok = build_char_tokenizer()
    model = LlamaForCausalLM(model_config(tok, BuildConfig()))
    short = SamplingSettings(num_samples=1, max_new_tokens=64)
    report = evaluate(model, tok, builtin_task().eval_rows(40), short)
    assert report.accuracy < ACCURACY_WINDOW[0] or report.format_rate < FORMAT_WINDOW[0]
    assert report.format_rate == 0.0


@pytest.mark.slow
def test_several_samples_per_prompt(default_model):
    model, tok = default_model
    rows = builtin_task().eval_rows(16)
    report = evaluate(model, tok, rows, SamplingSettings(num_samples=4, seed=3))
    assert report.n == 64 and report.n_scored == 64 and report.num_samples == 4
    assert report.pass_at_k >= report.accuracy
    assert sum(v.n for v in report.by_difficulty.values()) == 64
    d = report.to_dict()
    assert "samples" not in d and len(report.to_dict(include_samples=True)["samples"]) == 64
    json.dumps(report.to_dict(include_samples=True))
    with pytest.raises(ValueError, match="rows must not be empty"):
        evaluate(model, tok, [])


def test_evaluating_a_model_with_compiled_layers_compiles_nothing():
    """Training compiles the decoder layers; generate's cached calls must not fill their compile
    cache before the first training step (issue 22). Dynamo alone (backend "eager") counts."""
    import copy

    import torch
    from torch._dynamo.utils import counters

    from engine.trainers.compiled_layers import compile_decoder_layers

    model, tok = load_model_and_tokenizer(ModelSpec(), device="cpu")
    model = copy.deepcopy(model)
    assert compile_decoder_layers(model, backend="eager") > 0
    torch._dynamo.reset()
    counters.clear()
    evaluate(
        model, tok, builtin_task().eval_rows(4), SamplingSettings(num_samples=1, max_new_tokens=8)
    )
    assert counters["stats"]["unique_graphs"] == 0
    # the same layers do compile when called outside the evaluation
    model(torch.tensor([[1, 2, 3]]))
    assert counters["stats"]["unique_graphs"] > 0
