"""The agent reward components read tool rollouts as TRL 1.16 hands them over (issue 24)."""

from __future__ import annotations

import pytest

from rewards.completions.tool_calls import tool_calls
from rewards.composer import score
from rewards.registry import REGISTRY
from rewards.spec import PRESETS, ComponentSpec, RewardSpec
from rewards.trl_adapter import export_module
from tests.fresh_interpreter import run_json_script


def call(name: str, **arguments) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def turn(content: str = "", *calls: dict) -> dict:
    message = {"role": "assistant", "content": content}
    return {**message, "tool_calls": list(calls)} if calls else message


def result(name: str, content: str) -> dict:
    return {"role": "tool", "name": name, "content": content}


# The shapes TRL's tool loop builds: results as str(result), failures as str({"error": ...}).
GOOD = [
    turn("", call("calculator", expression="17*3")),
    result("calculator", "51"),
    turn("<answer>51</answer>"),
]
TWO_CALLS = [
    turn("", call("calculator", expression="17*3"), call("calculator", expression="51+1")),
    result("calculator", "51"),
    result("calculator", "52"),
    turn("<answer>52</answer>"),
]
UNKNOWN = [
    turn("", call("calc", expression="17*3")),
    result("calc", "{'error': 'Tool calc not found.'}"),
    turn("<answer>50</answer>"),
]
TOWER = [
    turn("", call("calculator", expression="9**9**9")),
    result("calculator", "{'error': 'exponent 387420489 is larger than 1000'}"),
    turn("<answer>9</answer>"),
]
MALFORMED = [turn('<tool_call>{"name": calc</tool_call>')]
NO_CALL = [turn("<answer>51</answer>")]
THREE_CALLS = [
    turn("", call("calculator", expression="1+1")),
    result("calculator", "2"),
    turn("", call("calculator", expression="2+2")),
    result("calculator", "4"),
    turn("", call("calculator", expression="17*3")),
    result("calculator", "51"),
    turn("<answer>51</answer>"),
]


def judge(component: str, rollouts: list, answers: list | None = None, **params):
    fn = REGISTRY[component].build(params)
    out = score(
        RewardSpec([ComponentSpec(component, 1.0, params)]),
        None,
        rollouts,
        answers=answers or ["51"] * len(rollouts),
    )
    raw = fn(rollouts, answer=answers or ["51"] * len(rollouts))  # TRL's call: same numbers
    assert raw == [s.trace[0].raw for s in out]
    return [(s.trace[0].raw, s.trace[0].explanation) for s in out]


def test_calls_are_numbered_with_their_results_and_errors():
    calls = tool_calls(TWO_CALLS)
    assert [c.describe() for c in calls] == [
        "call 1: calculator('17*3') -> 51",
        "call 2: calculator('51+1') -> 52",
    ]
    (unknown,) = tool_calls(UNKNOWN)
    assert unknown.error == "Tool calc not found." and unknown.result is None
    assert tool_calls("plain text") == [] and tool_calls(NO_CALL) == []
    # TRL drops a result that would pass max_completion_length: the call stays, without one.
    (cut,) = tool_calls([turn("", call("calculator", expression="3**8**3"))])
    assert cut.describe() == "call 1: calculator('3**8**3') -> no result (out of completion length)"


def test_tool_format_pays_parsed_calls_and_names_them():
    got = judge("tool_format", [GOOD, MALFORMED, NO_CALL], no_call_value=-0.5)
    assert got == [
        (1.0, "call 1: calculator well-formed"),
        (0.0, "1 of 1 calls malformed (a <tool_call> that is not JSON)"),
        (-0.5, "no tool call"),
    ]


def test_tool_errors_names_the_call_that_failed():
    got = judge("tool_errors", [GOOD, UNKNOWN, TOWER])
    assert got == [
        (0.0, "1 calls, none failed"),
        (-0.5, "call 1: unknown tool 'calc'"),
        (-0.5, "call 1: calculator('9**9**9') -> error: exponent 387420489 is larger than 1000"),
    ]


def test_tool_budget_counts_calls_against_the_budget():
    got = judge("tool_budget", [THREE_CALLS, TWO_CALLS, NO_CALL], budget=2)
    assert got == [
        (-0.5, "3 calls, budget 2"),
        (0.0, "2 calls, budget 2"),
        (0.0, "0 calls, budget 2"),
    ]


def test_tool_answer_reads_the_final_turn_after_the_calls():
    got = judge("tool_answer", [GOOD, UNKNOWN, NO_CALL], without_call_value=0.2)
    assert [v for v, _ in got] == [1.0, 0.0, 0.2]
    assert got[0][1].startswith("after call 1: calculator('17*3') -> 51: ")
    assert got[1][1].startswith("after call 1: calc('17*3') -> error: Tool calc not found.")
    assert got[2][1].startswith("no tool call: ")


def test_text_completions_are_scored_as_rollouts_without_calls():
    assert judge("tool_budget", ["<answer>51</answer>"])[0] == (0.0, "0 calls, budget 2")
    assert judge("tool_answer", ["<answer>51</answer>"])[0][0] == 1.0


def test_the_calculator_agent_preset_exports_and_scores_conversations_as_the_composer(tmp_path):
    spec = PRESETS["calculator agent"]
    (tmp_path / "agent_reward.py").write_text(export_module(spec))
    rollouts = [GOOD, TWO_CALLS, UNKNOWN, TOWER, MALFORMED, NO_CALL, THREE_CALLS]
    answers = ["51", "52", "51", "51", "51", "51", "51"]
    script = """
        import json, sys
        import agent_reward
        completions, answers = json.load(sys.stdin)
        print(json.dumps(agent_reward.score(completions, answer=answers)))
        """
    exported = run_json_script(script, tmp_path, [rollouts, answers])
    ours = [s.total for s in score(spec, None, rollouts, answers=answers)]
    assert exported == pytest.approx(ours)
    assert ours[0] == pytest.approx(1.0 + 0.5)  # right after one well-formed call
