import pytest
import yaml

from engine.config.run_config import RunConfig, documented_yaml
from engine.fields import ConfigError


def test_default_config_round_trips_through_yaml():
    config = RunConfig()
    again = RunConfig.from_yaml(config.to_yaml())
    assert again.to_dict() == config.to_dict()


def test_documented_yaml_is_commented_and_loads_as_the_default():
    text = documented_yaml()
    assert "# Completions sampled per prompt" in text
    assert RunConfig.from_dict(yaml.safe_load(text)).to_dict() == RunConfig().to_dict()


@pytest.mark.parametrize(
    ("patch", "field", "words"),
    [
        ({"training": {"stepz": 3}}, "training.stepz", "unknown field"),
        ({"training": {"steps": 0}}, "training.steps", "[1, 1e+06]"),
        ({"training": {"learning_rate": "fast"}}, "training.learning_rate", "number"),
        ({"generation": {"temperature": float("nan")}}, "generation.temperature", "finite"),
        ({"algorithm": "ddpg"}, "algorithm", "grpo, rloo, ppo"),
        ({"grpo": {"loss_type": "ppo"}}, "grpo.loss_type", "dapo"),
        ({"grpo": {"epsilon": 0.2, "epsilon_high": 0.1}}, "grpo.epsilon_high", "[0.2, 1]"),
        ({"training": {"report_to": ["mlflow"]}}, "training.report_to[0]", "tensorboard"),
        ({"ppo": {"value_model": "own"}}, "ppo.value_model", "shared, separate"),
        ({"ppo": {"kl_mode": "auto"}}, "ppo.kl_mode", "fixed, adaptive"),
    ],
)
def test_invalid_values_name_their_field(patch, field, words):
    data = RunConfig().to_dict()
    for section, value in patch.items():
        if isinstance(value, dict):
            data[section].update(value)
        else:
            data[section] = value
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict(data)
    assert info.value.field == field
    assert words in str(info.value)


def test_hand_written_exponents_read_as_numbers():
    config = RunConfig.from_yaml("training:\n  learning_rate: 5e-5\n")
    assert config.training.learning_rate == 5e-5


def test_reward_errors_carry_the_reward_prefix():
    data = RunConfig().to_dict()
    data["reward"]["components"][0]["weight"] = float("inf")
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict(data)
    assert info.value.field.startswith("reward.components[0]")


def test_batch_rule_is_explained_in_plain_words():
    data = RunConfig().to_dict()
    data["training"].update(prompts_per_step=3, num_gpus=2)
    data["generation"]["num_generations"] = 5
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict(data)
    assert info.value.field == "training.num_gpus"
    assert "3 prompts x 5 generations = 15 completions" in str(info.value)


def test_micro_batches_split_the_step_for_trl():
    config = RunConfig.from_dict(
        {
            "training": {"prompts_per_step": 4, "micro_batch_size": 8},
            "generation": {"num_generations": 8},
        }
    )
    assert config.per_device_batch_size() == 8
    assert config.gradient_accumulation_steps() == 4
    with pytest.raises(ConfigError, match="multiple of micro_batch_size 7"):
        RunConfig.from_dict({"training": {"prompts_per_step": 4, "micro_batch_size": 7}})


def test_config_files_that_cannot_be_read_are_named(tmp_path):
    with pytest.raises(ConfigError, match="is a folder; give the run config file"):
        RunConfig.load(tmp_path)
    binary = tmp_path / "run.yaml"
    binary.write_bytes(b"\xff\xfe\x00steps")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        RunConfig.load(binary)


def test_the_cli_reports_an_unwritable_output_without_a_traceback(tmp_path, engine_cli):
    result = engine_cli("export-config", tmp_path / "no" / "dir.yaml")
    assert result.returncode == 2
    assert result.stderr.startswith("error: No such file or directory:")
    assert "Traceback" not in result.stderr


def test_a_pretrained_model_starts_from_lora_and_settings_for_its_device():
    from engine.config.pretrained import pretrained_preset, pretrained_settings, suggested_config
    from engine.tasks import WORKED_EXAMPLE_SYSTEM_PROMPT
    from rewards.presets import INSTRUCT_PRESET, INSTRUCT_STOP_PRESET
    from rewards.spec import preset

    assert suggested_config(on_gpu=True) == RunConfig()
    for on_gpu in (True, False):
        config = suggested_config("Qwen/Qwen2.5-0.5B-Instruct", on_gpu)
        assert config.model.name_or_path == "Qwen/Qwen2.5-0.5B-Instruct"
        assert config.model.lora is not None and config.model.lora.r == 16
        for path, value in pretrained_settings(on_gpu).items():
            section, name = path.split(".")
            assert getattr(getattr(config, section), name) == value
        assert config.reward == preset(pretrained_preset(on_gpu))
        assert config.data.system_prompt == WORKED_EXAMPLE_SYSTEM_PROMPT
    gpu, cpu = (suggested_config("Qwen/Qwen2.5-0.5B-Instruct", g) for g in (True, False))
    assert gpu.completions_per_step > cpu.completions_per_step
    assert gpu.training.micro_batch_size is None and gpu.model.lora.dropout == 0
    assert gpu.model.lora.last_layers == 0 and cpu.model.lora.last_layers > 0
    # a short CPU run also pays for stopping at </answer> (issue 22: it drifted past it)
    assert gpu.reward == preset(INSTRUCT_PRESET) and cpu.reward == preset(INSTRUCT_STOP_PRESET)
    assert [c.name for c in cpu.reward.components] == ["correctness", "format", "rule"]
