"""The Playground on a run with tools: replies come through the run's tool loop, drawn as turns
and scored as conversations by the run's reward (issue 24)."""

from __future__ import annotations

import re

import pytest

from engine.config.agent import agent_config
from engine.config.run_config import RunConfig
from engine.generation.playground import SamplingSettings
from engine.run.saved_models import BASE, FINAL
from engine.runtime.devices import bounded_threads
from storage.sqlite.schema import RunStatus
from tests.in_process_run import run_in_process
from ui import api
from ui.access.identity import LOCAL_VIEWER
from ui.playground.replies import PlaygroundCache, Side, compare_stream
from ui.shared.context import AppContext

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory):
    """The exported agent config trained one small step (the shipped agent model)."""
    data = agent_config().to_dict()
    data["generation"]["num_generations"] = 2
    data["training"].update(steps=1, prompts_per_step=1, eval_samples=0, save_steps=0)
    data_dir = tmp_path_factory.mktemp("agent-run")
    with bounded_threads(1):
        run_id, status = run_in_process(data_dir, RunConfig.from_dict(data))
    assert status == RunStatus.COMPLETED
    return data_dir, run_id


def test_a_tool_runs_replies_are_rollouts_with_their_calls_traced(agent_run):
    data_dir, run_id = agent_run
    ctx = AppContext(data_dir)
    try:
        settings = SamplingSettings(max_new_tokens=192, num_samples=4, seed=1)
        frames = list(
            compare_stream(
                ctx,
                PlaygroundCache(),
                LOCAL_VIEWER,
                run_id,
                (Side(BASE), Side(FINAL)),
                "What is 347 * 29?",
                "10063",
                settings,
                agent_config().reward,
            )
        )
        base, final = frames[-1]
        for side in (base, final):
            assert "tool result" in side and "tool call" in side  # drawn as turns
        assert re.search(r"call 1: calculator\(&#x27;347 ?\* ?29&#x27;\) -&gt; 10063", base)
        asked = {"max_new_tokens": 192, "num_samples": 4, "seed": 1}
        out = api.generate(
            ctx, PlaygroundCache(), run_id, "What is 347 * 29?", FINAL, asked, viewer=LOCAL_VIEWER
        )
        assert any(isinstance(r, list) and r[0].get("tool_calls") for r in out["replies"])
    finally:
        ctx.close()
