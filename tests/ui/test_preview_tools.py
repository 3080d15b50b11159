"""The Preview with tools: each rollout runs the tool loop with the shipped agent model, and the
agent components score its calls (issue 24)."""

import re

import pytest

from rewards.spec import preset
from ui.preview.generate import PreviewError, PreviewRequest, generate_preview
from ui.shared.context import AppContext

AGENT_TASK = {"source": "builtin", "task": "calculator", "split": "heldout"}


@pytest.fixture
def ctx(data_dir):
    context = AppContext(data_dir)
    yield context
    context.close()


def test_a_preview_with_the_calculator_shows_calls_and_results_as_turns(ctx):
    asked = PreviewRequest(
        "agent",
        "",
        AGENT_TASK,
        num_prompts=3,
        samples_per_prompt=2,
        max_new_tokens=192,
        tools=("calculator",),
    )
    cache = generate_preview(ctx, asked)
    assert "tools: calculator" in cache.source
    called = [c for c in cache.completions if isinstance(c, list) and c[0].get("tool_calls")]
    assert called, cache.completions  # the agent model calls in about half its rollouts
    assert called[0][1]["role"] == "tool"
    scores = cache.rescore(preset("calculator agent"))
    i = cache.completions.index(called[0])
    row = scores.rows()[i]
    assert "tool result" in row[3]  # drawn as turns
    traces = [t.explanation for t in scores.scored[i].trace]
    assert any(re.search(r"call 1: calculator\('\d+ ?\* ?\d+'\) -> \d+", t) for t in traces)


def test_a_preview_refuses_a_tool_that_is_not_built_in():
    asked = PreviewRequest("agent", "", AGENT_TASK, tools=("shell",))
    with pytest.raises(PreviewError, match="must be distinct built-in tools") as err:
        asked.check()
    assert err.value.field == "tools"
