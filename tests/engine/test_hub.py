"""Pushing a run's model to the Hub: every input is checked before any network call."""

import os

import pytest

from engine.exports.hub import HubPushError, push_model


def test_inputs_are_checked_before_any_network(tmp_path):
    run_dir = tmp_path / "runs" / "grpo-1"
    run_dir.mkdir(parents=True)
    with pytest.raises(HubPushError, match="owner/name"):
        push_model(run_dir, "no-slash", "hf_x", config_text="")
    with pytest.raises(HubPushError, match="write token"):
        push_model(run_dir, "alice/model", " ", config_text="")
    with pytest.raises(HubPushError, match="grpo-1 has no checkpoint to push yet"):
        push_model(run_dir, "alice/model", "hf_x", config_text="")


def test_the_cli_asks_for_the_token_variable(data_dir, engine_cli):
    (data_dir / "runs" / "grpo-1").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
    result = engine_cli("push", "grpo-1", "alice/m", "--data-dir", data_dir, env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: set HF_TOKEN to a Hugging Face write token"
