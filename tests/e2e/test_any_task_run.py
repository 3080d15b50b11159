"""A GRPO run through the CLI with the user's own python reward and a reward model."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from engine.models.char_tokenizer import build_char_tokenizer
from storage import runs as run_store
from storage.paths import db_path
from storage.records import samples as sample_store
from storage.records.metrics import metric_names
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.tiny_models import save_tiny_reward_model

pytestmark = pytest.mark.slow

USER_REWARD = (
    "def reward(completions, answer, **columns):\n"
    "    return [(1.0, 'holds the gold') if str(a) in c else (0.0, 'no gold')\n"
    "            for c, a in zip(completions, answer)]\n"
)


def test_grpo_trains_with_a_python_and_a_reward_model_component(data_dir, tmp_path, engine_cli):
    rm = save_tiny_reward_model(tmp_path / "rm", build_char_tokenizer())
    path = tmp_path / "run.yaml"
    env = {**os.environ, "STUDIO_ALLOW_CODE": "1", "STUDIO_DATA_DIR": str(data_dir)}
    data = tmp_path / "sums.jsonl"
    data.write_text(
        "\n".join(json.dumps({"q": f"What is {i} + 2?", "a": str(i + 2)}) for i in range(40)),
        encoding="utf-8",
    )
    config = _config_dict(rm)
    config["data"] = {
        "source": "file",
        "path": str(data),
        "prompt_column": "q",
        "answer_column": "a",
        "heldout_share": 0.25,
    }
    config["training"] |= {"eval_steps": 1, "eval_samples": 4}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = engine_cli("train", path, "--data-dir", data_dir, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    with Database(db_path(data_dir)) as db:
        (run,) = run_store.list_runs(db)
        assert run.status == RunStatus.COMPLETED, run.error_traceback
        names = set(metric_names(db, run.id))
        steps = sample_store.sample_steps(db, run.id)
        samples = sample_store.samples_at(db, run.id, steps[-1])
    assert {"rewards/python", "rewards/reward_model", "reward/total"} <= names
    # the file's held-out split is evaluated with the run's own reward
    assert {"eval/reward_total", "eval/rewards/python", "eval/rewards/reward_model"} <= names
    assert "eval/format_rate" not in names  # the built-in task's check, not this dataset's
    assert run.last_step == 2
    traces = [s.trace for s in samples]
    assert all([t["name"] for t in trace] == ["python", "reward_model"] for trace in traces)
    assert all(trace[0]["explanation"] in ("holds the gold", "no gold") for trace in traces)
    assert all("rank" in trace[1]["explanation"] for trace in traces)


def test_without_the_flag_the_cli_refuses_the_python_component_by_name(
    data_dir, tmp_path, engine_cli
):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_config_dict(tmp_path)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "STUDIO_ALLOW_CODE"}
    result = engine_cli("train", path, "--data-dir", data_dir, env=env)
    assert result.returncode == 2
    assert "component 'python'" in result.stderr and "STUDIO_ALLOW_CODE=1" in result.stderr
    assert "Traceback" not in result.stderr


def _config_dict(rm) -> dict:
    return {
        "name": "any task",
        "algorithm": "grpo",
        "reward": {
            "components": [
                {"name": "python", "weight": 1.0, "params": {"code": USER_REWARD}},
                {
                    "name": "reward_model",
                    "weight": 0.1,
                    "params": {"model": str(rm), "output": "standardised", "device": "cpu"},
                },
            ]
        },
        "generation": {"num_generations": 4, "max_completion_length": 32},
        "training": {
            "steps": 2,
            "prompts_per_step": 2,
            "learning_rate": 1e-4,
            "eval_steps": 0,
            "save_steps": 0,
        },
    }
