"""A run config file brought into the Train form: through the same checks as the API's and the
form's, drawn as a reload draws the kept form, the data path never read (issue 45, deliverable
5)."""

from __future__ import annotations

import dataclasses

import pytest

from engine.config.agent import AGENT_TASK, agent_config
from engine.config.run_config import RunConfig, documented_yaml
from engine.config.suggestions import suggested_config
from engine.fields import ConfigError
from ui.memory.saved import train_values
from ui.train import form as train_form
from ui.train.config_file import form_record, not_in_form, read_config_file

FIELDS = {f.path: f for f in train_form.form_fields()}
MODEL_KEYS = ["default", "english", "agent", "custom"]


def drawn(config: RunConfig):
    return train_values(
        form_record(config, FIELDS, MODEL_KEYS), FIELDS, train_form.algorithms(), MODEL_KEYS
    )


@pytest.mark.parametrize(
    "config",
    [agent_config(), suggested_config("Qwen/Qwen2.5-0.5B-Instruct", True, "ppo")],
    ids=["agent", "pretrained-ppo"],
)
def test_every_value_of_an_exported_config_passes_its_input_and_builds_the_same_run(
    tmp_path, config
):
    path = tmp_path / "run.yaml"
    path.write_text(documented_yaml(config), encoding="utf-8")  # as export-config writes it
    loaded = read_config_file(str(path))
    got = drawn(loaded)
    assert got.dropped == []
    assert got.algorithm == config.algorithm
    # The form's values build the same run: every hyperparameter, section by section.
    inputs = train_form.TrainInputs(
        name=got.name or "",
        algorithm=got.algorithm,
        model=config.model.to_dict(),
        data=dataclasses.asdict(config.data),
        reward=config.reward,
    )
    rebuilt = train_form.build_config(inputs, list(FIELDS.values()), got.hyper)
    for section in ("training", "generation", config.algorithm):
        assert getattr(rebuilt, section) == getattr(config, section), section


def test_the_model_and_data_go_to_their_inputs():
    agent = drawn(agent_config())
    assert agent.model["key"] == "agent" and agent.data["task"] == AGENT_TASK
    custom = drawn(suggested_config("Qwen/Qwen2.5-0.5B-Instruct", True, "grpo"))
    assert custom.model["key"] == "custom"
    assert custom.model["custom"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert custom.model["lora"] is True and custom.model["lora_r"] > 0


def test_a_data_file_named_by_path_is_not_read_and_the_user_is_told(tmp_path):
    secret = tmp_path / "server-only.jsonl"
    secret.write_text('{"prompt": "p", "answer": "1"}\n', encoding="utf-8")
    config = RunConfig.from_dict({"data": {"source": "file", "path": str(secret)}})
    got = drawn(config)
    assert got.data == {
        "source": "file",
        "prompt_col": "prompt",
        "answer_col": "answer",
        "system_col": "",
    }
    assert not_in_form(config) == ["data.path (server-only.jsonl: upload it)"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("training:\n  steps: -3\n", "config file: training.steps:"),
        ("- a list\n", "config file: must be a run config mapping"),
        ("", "config file: must be a run config mapping"),
        ("algorithm: sarsa\n", "config file: algorithm:"),
    ],
)
def test_a_bad_config_file_names_the_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{message}"):
        read_config_file(str(path))


def test_a_file_that_is_not_text_is_refused(tmp_path):
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="config file: not UTF-8 text"):
        read_config_file(str(path))
