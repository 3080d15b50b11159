"""Per-algorithm suggestions (issue 43): each algorithm's settings for a pretrained model on a
GPU or CPU differ, validate as a RunConfig, and ``export-config --algorithm`` writes them with
a comment saying where each number comes from."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.config.algorithms import PPOSettings, RLOOSettings
from engine.config.run_config import ALGORITHMS, RunConfig
from engine.config.suggestions import algorithm_suggestions, suggested_config
from engine.fields import ConfigError

PRETRAINED = "smollm2-135m-instruct"


@pytest.mark.parametrize("on_gpu", [True, False])
def test_each_algorithm_has_its_own_suggestion_and_it_validates(on_gpu):
    configs = {a: suggested_config(PRETRAINED, on_gpu, a) for a in ALGORITHMS}
    for algorithm, config in configs.items():
        assert config.algorithm == algorithm
        assert RunConfig.from_yaml(config.to_yaml()) == config  # a valid config, round-tripped
    ppo, rloo = configs["ppo"].ppo, configs["rloo"].rloo
    assert ppo.kl_coef == 0.0 != PPOSettings().kl_coef  # no reference forward
    assert ppo.value_warmup_steps > 0 == PPOSettings().value_warmup_steps
    assert ppo.reward_normalization == "batch" != PPOSettings().reward_normalization
    assert rloo.normalize_advantages is not RLOOSettings().normalize_advantages
    suggestions = {a: algorithm_suggestions(a, True, on_gpu) for a in ALGORITHMS}
    assert len({frozenset(s) for s in suggestions.values()}) == len(ALGORITHMS)
    for found in suggestions.values():
        assert all(s.source for s in found.values())  # every number says where it comes from
    # The device's pretrained settings stay under every algorithm.
    rates = {c.training.learning_rate for c in configs.values()}
    assert len(rates) == 1


def test_the_default_model_keeps_the_config_defaults_for_every_algorithm():
    for algorithm in ALGORITHMS:
        config = suggested_config("default", False, algorithm)
        assert config.algorithm == algorithm
        assert config.ppo == PPOSettings() and config.training == RunConfig().training


def test_an_unknown_algorithm_names_the_field_and_the_choices():
    with pytest.raises(ConfigError) as err:
        algorithm_suggestions("sac", True, True)
    assert err.value.field == "algorithm" and "grpo, rloo, ppo" in str(err.value)


def test_export_config_writes_the_algorithms_suggestion_with_its_sources(tmp_path, capsys):
    out = tmp_path / "ppo.yaml"
    args = ["export-config", str(out), "--model", PRETRAINED, "--device", "gpu"]
    assert main([*args, "--algorithm", "ppo"]) == 0
    text = out.read_text()
    config = RunConfig.load(out)
    assert config.algorithm == "ppo" and config.ppo.kl_coef == 0.0
    lines = text.splitlines()
    kl = lines.index("  kl_coef: 0.0")
    assert lines[kl - 1].startswith("  # suggested: no KL penalty") and "Hu et al." in lines[kl - 1]
    lr = next(i for i, line in enumerate(lines) if line.startswith("  learning_rate:"))
    assert "bench/RESULTS.md" in lines[lr - 1]
    assert main([*args, "--algorithm", "sac"]) == 2
    assert "algorithm: must be one of grpo, rloo, ppo" in capsys.readouterr().err
