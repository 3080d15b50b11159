"""The built-in agent task (multi-digit products), the shipped agent model and the tool loop
that the Preview and the held-out evaluation run outside training (issue 24)."""

from __future__ import annotations

import pytest

from engine.config.agent import agent_config
from engine.data.datasets import DatasetError, DataSpec, load_rows
from engine.generation.settings import SamplingSettings
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks.arithmetic import is_held_out
from engine.tasks.calculator import CalculatorTask
from engine.tools.rollout import sample_tool_rollouts, tool_names
from engine.tools.template import prepare_tool_tokenizer
from engine.tools.toolbox import toolbox_class
from engine.tracking.tool_evaluation import evaluate_with_tools
from rewards.completions.tool_calls import tool_calls


def test_the_held_out_products_are_never_trained_on():
    task = CalculatorTask(seed=3)
    train = {r["key"] for r in task.train_rows(2000)}
    held = {r["key"] for r in task.eval_rows(200)}
    assert train and held and not train & held
    assert all(is_held_out(k, 3, task.held_out_share) for k in held)
    row = task.eval_rows(1)[0]
    a, b = map(int, row["key"].split("*"))
    assert row["answer"] == str(a * b) and 10 <= a <= 999 and 11 <= b <= 99
    assert task.eval_rows(5) == task.eval_rows(5)  # the same rows for a seed


def test_the_data_spec_names_the_built_in_task():
    rows = load_rows(DataSpec(task="calculator", split="heldout", max_rows=3))
    assert [r["id"] for r in rows] == [f"calc-heldout-0000{i}" for i in range(3)]
    assert "calculator" in rows[0]["prompt"][0]["content"]
    with pytest.raises(DatasetError, match="must be one of") as err:
        DataSpec(task="chess")
    assert err.value.field == "task"


def test_the_agent_config_offers_the_calculator_to_the_agent_model():
    config = agent_config()
    assert config.model.name_or_path == "agent" and config.data.task == "calculator"
    assert config.tools.builtin == ["calculator"] and config.algorithm == "grpo"
    assert next(n for n, _ in config.reward.enabled_components()) == "tool_answer"


@pytest.fixture(scope="module")
def agent():
    model, tokenizer = load_model_and_tokenizer(ModelSpec("agent"), device="cpu")
    prepare_tool_tokenizer(tokenizer, "agent")
    return model, tokenizer


def test_a_tool_rollout_runs_the_call_and_answers_after_its_result(agent):
    model, tokenizer = agent
    rows = CalculatorTask().eval_rows(6)
    box = toolbox_class(["calculator"], 2)
    assert tool_names(box) == ["calculator"]
    settings = SamplingSettings(num_samples=2, max_new_tokens=192)
    prompts = [r["prompt"] for r in rows]
    rollouts = sample_tool_rollouts(model, tokenizer, prompts, box, settings, rows)
    assert [(r.prompt_index, r.sample_index) for r in rollouts] == [
        (i, j) for i in range(6) for j in range(2)
    ]
    called = [r for r in rollouts if tool_calls(r.conversation)]
    assert called, [r.conversation for r in rollouts]
    call = tool_calls(called[0].conversation)[0]
    a, b = (int(x) for x in call.arguments["expression"].replace(" ", "").split("*"))
    assert call.result == str(a * b)  # the real calculator answered
    assert called[0].conversation[-1]["role"] == "assistant"  # and the model spoke after it
    assert all(len(r.completion_ids) <= 192 for r in rollouts)
    # Too little room for the result: it is dropped and the rollout ends, as TRL drops it.
    room = SamplingSettings(num_samples=1, max_new_tokens=80)
    short = sample_tool_rollouts(model, tokenizer, [rows[0]["prompt"]] * 4, box, room)
    assert all(m["role"] == "assistant" for r in short for m in r.conversation)


def test_the_held_out_evaluation_with_tools_counts_useful_calls(agent):
    model, tokenizer = agent
    rows = CalculatorTask().eval_rows(8)
    report = evaluate_with_tools(model, tokenizer, rows, toolbox_class(["calculator"], 2))
    assert report.n == 8 and 0 < report.call_rate <= 1
    assert report.useful_call_rate <= report.call_rate
    right = [r for r in report.samples if r["correct"]]
    assert report.accuracy == len(right) / 8
