import dataclasses
import re

import pytest

from engine.config.pretrained import CPU_SETTINGS
from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from rewards.spec import preset
from ui.train import form as train_form
from ui.train.form import TrainInputs, build_config, form_fields, values_from_config


@pytest.fixture(scope="module")
def fields():
    return form_fields()


def inputs(algorithm="grpo", name="t"):
    return TrainInputs(
        name=name,
        algorithm=algorithm,
        model=RunConfig().model.to_dict(),
        data={"source": "builtin", "split": "train"},
        reward=preset("R1-style math"),
    )


def defaults(fields):
    return {f.path: list(f.default) if f.kind == "multi" else f.default for f in fields}


def test_every_config_field_of_every_section_has_an_input(fields):
    paths = {f.path for f in fields}
    for section in (*train_form.HYPER_SECTIONS, *train_form.algorithms()):
        cls = type(getattr(RunConfig(), section))
        for f in dataclasses.fields(cls):
            assert f"{section}.{f.name}" in paths
    assert all(f.help for f in fields), "every input carries the config's help text"


def test_key_fields_are_real_config_fields(fields):
    # A key field that names no config field (ppo.beta once) silently drops out of the form.
    assert {f.path for f in fields if f.key} == train_form.KEY_FIELDS


def test_values_with_a_missing_or_unknown_path_are_refused(fields):
    values = defaults(fields)
    with pytest.raises(ValueError, match="unknown"):
        build_config(inputs(), fields, {**values, "training.no_such_knob": 1})
    del values["training.steps"]
    with pytest.raises(ValueError, match="missing"):
        build_config(inputs(), fields, values)


def test_fields_with_a_fixed_set_of_values_are_choices(fields):
    by_path = {f.path: f for f in fields}
    assert by_path["ppo.value_model"].kind == "choice"
    assert by_path["ppo.value_model"].choices == ("shared", "separate")
    assert (
        by_path["grpo.loss_type"].kind == "choice" and "dapo" in by_path["grpo.loss_type"].choices
    )
    assert by_path["training.report_to"].kind == "multi"
    assert by_path["training.report_to"].choices == ("tensorboard", "wandb", "trackio")


def test_algorithms_follow_the_config_sections():
    algos = train_form.algorithms()
    assert algos[:2] == ["grpo", "rloo"]
    assert all(hasattr(RunConfig(), a) for a in algos)


def test_defaults_build_the_default_config(fields):
    config = build_config(inputs(), fields, defaults(fields))
    expected = RunConfig(name="t")
    for section in ("generation", "training", "tools", "grpo"):
        assert getattr(config, section) == getattr(expected, section)


def test_a_bad_value_names_its_field(fields):
    values = defaults(fields)
    values["training.steps"] = 0
    with pytest.raises(ConfigError) as err:
        build_config(inputs(), fields, values)
    assert err.value.field == "training.steps"


def test_batch_rule_is_explained_on_its_field(fields):
    values = defaults(fields)
    values["training.micro_batch_size"] = "7"
    with pytest.raises(ConfigError) as err:
        build_config(inputs(), fields, values)
    assert err.value.field == "training.micro_batch_size"
    assert "multiple" in str(err.value)


def test_optional_numbers_typed_as_text(fields):
    values = defaults(fields)
    values["grpo.epsilon_high"] = "0.28"
    assert build_config(inputs(), fields, values).grpo.epsilon_high == 0.28
    values["grpo.epsilon_high"] = "  "
    assert build_config(inputs(), fields, values).grpo.epsilon_high is None
    values["grpo.epsilon_high"] = "lots"
    with pytest.raises(ConfigError) as err:
        build_config(inputs(), fields, values)
    assert err.value.field == "grpo.epsilon_high"


def test_demo_cap_on_steps(fields):
    from ui.shared.context import DemoLimits

    config = build_config(inputs(), fields, defaults(fields))
    with pytest.raises(ConfigError) as err:
        DemoLimits(sizes={"training.steps": 10}).within_caps(config)
    assert err.value.field == "training.steps" and "at most 10" in str(err.value)


def test_only_the_chosen_algorithm_section_is_used(fields):
    values = defaults(fields)
    values["grpo.beta"] = -5  # invalid, but not used by an RLOO run
    config = build_config(inputs("rloo"), fields, values)
    assert config.algorithm == "rloo"


def test_form_values_reproduce_a_config(fields):
    config = RunConfig.from_dict({"training": {"steps": 3, "report_to": ["tensorboard"]}})
    values = values_from_config(config, fields)
    again = build_config(inputs(), fields, values)
    assert again.training == config.training


def test_a_tool_run_loaded_into_the_form_keeps_its_tools(fields):
    config = RunConfig.from_dict(
        {
            "tools": {"builtin": ["calculator", "lookup"], "max_tool_calls": 2},
            "grpo": {"world_model_coeff": 0.1, "world_loss_normalization": "sequence_mean"},
        }
    )
    values = values_from_config(config, fields)
    assert values["tools.builtin"] == ["calculator", "lookup"]
    again = build_config(inputs(), fields, values)
    assert again.tools == config.tools and again.grpo == config.grpo
    # The world-model loss without tools, and tools with RLOO, are refused on their fields.
    values["tools.builtin"] = []
    with pytest.raises(ConfigError) as err:
        build_config(inputs(), fields, values)
    assert err.value.field == "grpo.world_model_coeff"
    values.update({"tools.builtin": ["calculator"]})
    with pytest.raises(ConfigError) as err:
        build_config(inputs("rloo"), fields, values)
    assert err.value.field == "tools.builtin"


def test_cli_command_quotes_paths():
    assert train_form.cli_command("my config.yaml") == "python -m engine train 'my config.yaml'"


def test_suggestions_follow_the_model_and_the_device(fields):
    on_gpu = train_form.suggested_values(fields, pretrained=True, on_gpu=True)
    assert on_gpu["training.prompts_per_step"] == 32
    assert on_gpu["training.micro_batch_size"] is None  # picked for the card at launch
    pretrained = train_form.suggested_values(fields, pretrained=True, on_gpu=False)
    assert pretrained["training.micro_batch_size"] == 16
    tiny = train_form.suggested_values(fields, pretrained=False, on_gpu=True)
    assert tiny["training.learning_rate"] == RunConfig().training.learning_rate
    assert tiny["training.micro_batch_size"] is None
    values = defaults(fields)
    for path, value in pretrained.items():
        values[path] = value
    config = build_config(inputs(), fields, values)  # the suggestions form a valid config
    tokens = config.generation.max_completion_length
    assert tokens == CPU_SETTINGS["generation.max_completion_length"]


def test_summary_shows_the_memory_estimate_and_follows_the_micro_batch(fields):
    from ui.train.tab import run_summary

    values = defaults(fields)
    micro = "training.micro_batch_size"
    # The summary as the page shows it (escape() backslash-escapes Markdown punctuation).
    whole = re.sub(r"\\(.)", r"\1", run_summary(build_config(inputs(), fields, values)))
    values[micro] = "8"
    smaller = re.sub(r"\\(.)", r"\1", run_summary(build_config(inputs(), fields, values)))
    assert "Estimated peak memory per device" in whole
    assert "lower it with training.micro_batch_size" in whole
    assert "micro-batches of 64" in whole and "micro-batches of 8" in smaller
