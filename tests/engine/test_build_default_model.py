"""The build script at a tiny budget: loads with the Auto classes, deterministic for a seed."""

from __future__ import annotations

import json
import random

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from engine.builds.build_default_model import (
    BuildConfig,
    build,
    lr_factor,
    main,
    parse_args,
    training_prompt,
)
from engine.tasks import builtin_task
from engine.tasks.phrasings import HELD_OUT_FAMILY_NAMES

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
    assert "Held-out evaluation: built-in templates" in card and "--seed 0 --steps 2" in card
    assert "phrasings never trained on" in card and "| pass@8 |" in card
    info = json.loads((out / "build_info.json").read_text())
    assert info["eval"]["n"] == 4 and info["evals"]["unseen_phrasings"]["n"] == 4
    assert set(info["evals"]["unseen_phrasings"]["by_family"]) <= set(HELD_OUT_FAMILY_NAMES)
    assert info["evals"]["builtin_pass_at_k"]["num_samples"] == 8
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
    with pytest.raises(ValueError, match="builtin_share must be in"):
        BuildConfig(builtin_share=1.5)
    with pytest.raises(ValueError, match="no_system_share must be in"):
        BuildConfig(no_system_share=-0.1)
    with pytest.raises(SystemExit):
        parse_args(["--minutes", "1", "--steps", "5"])


def test_minutes_budget_stops_on_time(tmp_path):
    cfg = BuildConfig(out=tmp_path / "m", minutes=0.02, batch_size=4, eval_rows=0)
    summary = build(cfg)
    assert summary["stats"]["steps"] >= 1
    assert (tmp_path / "m" / "config.json").is_file()


def test_training_prompts_vary_the_phrasing_and_sometimes_drop_the_system_message():
    task, rng = builtin_task(), random.Random(0)
    cfg = BuildConfig(no_system_share=0.5)
    prompts = [training_prompt(task, rng, cfg) for _ in range(400)]
    roles = [[m["role"] for m in messages] for _, messages in prompts]
    assert 120 < sum(r == ["user"] for r in roles) < 280
    assert all(r in (["user"], ["system", "user"]) for r in roles)
    questions = {messages[-1]["content"] for _, messages in prompts}
    assert len(questions) > 380
    for problem, messages in prompts:
        assert all(str(n) in messages[-1]["content"] for n in problem.numbers)
    only_builtin = BuildConfig(builtin_share=1.0, noise_share=0.0, no_system_share=0.0)
    problem, messages = training_prompt(task, random.Random(5), only_builtin)
    replay = random.Random(5)
    assert task.sample_problem(replay) == problem
    replay.random()  # the draw between built-in templates and the other families
    assert messages == task.prompt(problem.question(replay))
