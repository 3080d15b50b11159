"""The agent model's build script at a tiny budget, and the mix of replies it teaches."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from transformers import AutoModelForCausalLM

from engine.builds.build_agent_model import FIRST_TURN_MIX, AgentBuildConfig, example, main
from engine.tasks.calculator import CalculatorTask


def test_the_targets_mix_calls_guesses_and_malformed_calls():
    cfg, task, rng = AgentBuildConfig(), CalculatorTask(), random.Random(0)
    kinds: Counter = Counter()
    for _ in range(2000):
        messages, reply = example(task, rng, cfg)
        if messages[-1]["role"] == "tool":
            kinds["after_result"] += 1
            assert reply.startswith("<answer>")
        elif '"name": "calculator"' in reply:
            kinds["call"] += 1
        elif '"name": "calc"' in reply:
            kinds["unknown_tool"] += 1
        elif reply.startswith("<tool_call>calculator("):
            kinds["not_json"] += 1
        else:
            kinds["head"] += 1
    first = 2000 - kinds["after_result"]
    assert kinds["after_result"] / 2000 == pytest.approx(cfg.after_result_share, abs=0.04)
    for kind, share in FIRST_TURN_MIX.items():
        assert kinds[kind] / first == pytest.approx(share, abs=0.04), kind


@pytest.mark.slow
def test_a_tiny_build_loads_and_writes_its_card(tmp_path):
    out = tmp_path / "agent"
    main(["--out", str(out), "--steps", "2", "--eval-rows", "2"])
    assert AutoModelForCausalLM.from_pretrained(out).config.model_type == "llama"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "--seed 0 --steps 2 --eval-rows 2" in card and "| accuracy | called |" in card
    info = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    assert info["eval"]["n"] == 2 and info["stats"]["steps"] == 2
