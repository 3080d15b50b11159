"""The build script at a tiny budget: loads with the Auto classes, deterministic for a seed."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from engine.build_default_model import BuildConfig, build, lr_factor, main, parse_args

pytestmark = pytest.mark.slow


def tiny(out, seed=0, eval_rows=0):
    return BuildConfig(out=out, seed=seed, steps=3, batch_size=4, eval_rows=eval_rows)


def test_tiny_build_loads_with_auto_classes(tmp_path):
    out = tmp_path / "model"
    main(["--out", str(out), "--steps", "2", "--batch-size", "4", "--eval-rows", "4"])
    model = AutoModelForCausalLM.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    assert model.config.model_type == "llama" and model.config.tie_word_embeddings
    assert tok.eos_token == "<|end|>"
    card = (out / "README.md").read_text()
    assert "Held-out evaluation" in card and "--seed 0 --steps 2" in card
    assert (out / "model.safetensors").is_file()


def test_build_is_deterministic_for_a_seed(tmp_path):
    build(tiny(tmp_path / "a"))
    build(tiny(tmp_path / "b"))
    build(tiny(tmp_path / "c", seed=1))
    a, b, c = (AutoModelForCausalLM.from_pretrained(tmp_path / n) for n in "abc")
    for (name, pa), pb in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.model.embed_tokens.weight, c.model.embed_tokens.weight)


def test_schedule_and_arguments():
    assert lr_factor(0.0, 0.1, 0.1) == pytest.approx(1e-3)
    assert lr_factor(0.1, 0.1, 0.1) == pytest.approx(1.0)
    assert lr_factor(1.0, 0.1, 0.1) == pytest.approx(0.1)
    cfg = parse_args(["--minutes", "1.5", "--seed", "3"])
    assert cfg.minutes == 1.5 and cfg.seed == 3
    with pytest.raises(ValueError, match="style_mix has unknown styles"):
        BuildConfig(style_mix={"poetry": 1.0})
    with pytest.raises(SystemExit):
        parse_args(["--minutes", "1", "--steps", "5"])


def test_minutes_budget_stops_on_time(tmp_path):
    cfg = BuildConfig(out=tmp_path / "m", minutes=0.02, batch_size=4, eval_rows=0)
    summary = build(cfg)
    assert summary["stats"]["steps"] >= 1
    assert (tmp_path / "m" / "config.json").is_file()
