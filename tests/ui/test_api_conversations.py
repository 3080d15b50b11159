"""/score_preview scores tool rollouts sent as lists of turns, each part bounded (issue 24)."""

import pytest

from rewards.spec import preset
from ui import api
from ui.api import ApiError
from ui.api.conversations import MAX_TURNS

AGENT = preset("calculator agent").to_dict()


def rollout(expression="17*3", result="51", answer="<answer>51</answer>", name="calculator"):
    call = {"type": "function", "function": {"name": name, "arguments": {"expression": expression}}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": name, "content": result},
        {"role": "assistant", "content": answer},
    ]


def test_a_conversation_is_scored_with_its_calls_named_in_the_traces(ctx):
    out = api.score_preview(ctx, AGENT, [rollout(), "<answer>51</answer>"], answers=["51", "51"])
    called, plain = out["samples"]
    lines = [t["explanation"] for t in called["trace"]]
    assert lines[0] == "after call 1: calculator('17*3') -> 51: answer 51 = gold 51"
    assert "call 1: calculator well-formed" in lines
    assert plain["trace"][1]["explanation"] == "no tool call"
    assert out["totals"][0] > out["totals"][1]  # the call pays
    unknown = rollout(name="calc", result="{'error': 'Tool calc not found.'}")
    failed = api.score_preview(ctx, AGENT, [unknown])
    assert "call 1: unknown tool 'calc'" in [
        t["explanation"] for t in failed["samples"][0]["trace"]
    ]


@pytest.mark.parametrize(
    ("completion", "message"),
    [
        ([{"role": "assistant", "content": "x"}] * (MAX_TURNS + 1), r"completions\[0\]: 17 turns"),
        ([], r"completions\[0\]: 0 turns"),
        ([{"role": "system", "content": "x"}], r"completions\[0\]\[0\]\.role: must be one of"),
        ([{"role": "assistant", "secret": 1}], r"completions\[0\]\[0\]: unknown keys \['secret'\]"),
        ([{"role": "tool", "content": "1", "tool_calls": []}], r"assistant turn only"),
        ([{"content": 5}], r"completions\[0\]\[0\]\.content: must be a string, got 5"),
        (rollout(expression="1" * 20_001), r"arguments\.expression: 20,001 characters"),
        (rollout(name="x" * 65), r"function\.name: must be a name of 1 to 64"),
        (rollout(answer="a\x00b"), r"completions\[0\]\[2\]\.content: must not contain NUL"),
        (
            [{"tool_calls": [{"type": "function", "function": {"name": "c", "arguments": []}}]}],
            r"arguments: a JSON text or a mapping",
        ),
        (5, r"completions\[0\]: must be a string or a list of turns, got 5"),
    ],
)
def test_a_conversation_out_of_bounds_is_refused_naming_the_part(ctx, completion, message):
    with pytest.raises(ApiError, match=message):
        api.score_preview(ctx, AGENT, [completion])


def test_nested_arguments_are_refused_before_anything_reads_them(ctx):
    deep: dict = {}
    for _ in range(5_000):  # deeper than Python's recursion limit
        deep = {"x": deep}
    call = {"type": "function", "function": {"name": "calculator", "arguments": deep}}
    with pytest.raises(ApiError, match=r"arguments\.x: a string, number, boolean or null"):
        api.score_preview(ctx, AGENT, [[{"role": "assistant", "tool_calls": [call]}]])


def test_turns_count_towards_the_characters_of_one_call(ctx):
    from ui.api import MAX_API_TEXT_CHARS, MAX_API_TOTAL_CHARS

    turns = [{"role": "tool", "content": "x" * MAX_API_TEXT_CHARS}] * MAX_TURNS
    many = [turns] * (MAX_API_TOTAL_CHARS // (MAX_API_TEXT_CHARS * MAX_TURNS) + 1)
    with pytest.raises(ApiError, match=r"completions: [\d,]+ characters .* at most 1,000,000"):
        api.score_preview(ctx, AGENT, many)
