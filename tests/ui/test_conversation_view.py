"""Tool rollouts drawn as turns (issue 24): model text, call, masked result, answer; escaped."""

from __future__ import annotations

from rewards.spec import preset
from storage import runs as run_store
from storage.records import samples as sample_store
from ui.access.identity import LOCAL_VIEWER
from ui.preview.cache import PreviewCache
from ui.runs import actions as run_actions
from ui.shared.conversation_view import (
    Turn,
    completion_view,
    conversation_turns,
    text_turns,
    turns_html,
)

# As TRL 1.16 hands a tool rollout to the reward (and samples.py stores it).
ROLLOUT = [
    {
        "role": "assistant",
        "content": "Let me compute.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "calculator", "arguments": {"expression": "17*3"}},
            }
        ],
    },
    {"role": "tool", "name": "calculator", "content": "51"},
    {"role": "assistant", "content": "<answer>51</answer>"},
]


def test_a_rollout_becomes_text_call_result_answer():
    assert conversation_turns(ROLLOUT) == [
        Turn("text", "Let me compute."),
        Turn("call", 'calculator({"expression": "17*3"})'),
        Turn("result", "51"),
        Turn("answer", "<answer>51</answer>"),
    ]
    assert [t.trained for t in conversation_turns(ROLLOUT)] == [True, True, False, True]


def test_the_masked_result_is_drawn_apart_from_trained_turns():
    page = turns_html(conversation_turns(ROLLOUT))
    assert page.count('class="turn ') == 4
    result = page[page.index('class="turn turn-result"') :]
    assert "dashed" in result.split(">", 1)[0]  # its own border, not the trained bar
    assert "masked, not trained" in result
    assert 'title="masked out of the policy loss"' in page
    assert page.count('title="in the loss"') == 3
    assert 'title="extracted answer">51</mark>' in page  # the answer highlighted as ever


def test_every_text_is_escaped():
    hostile = [
        {
            "role": "assistant",
            "content": "<img src=x onerror=alert(1)>",
            "tool_calls": [{"function": {"name": "<script>", "arguments": {"x": "</div>"}}}],
        },
        {"role": "tool", "content": "<script>alert(2)</script>"},
    ]
    page = turns_html(conversation_turns(hostile))
    assert "<script>" not in page and "<img" not in page and '</div>"' not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_sampled_text_shows_its_well_formed_calls_as_turns():
    call = '{"name": "calculator", "arguments": {"expression": "2+2"}}'
    text = f"First <tool_call>{call}</tool_call> then 4"
    assert text_turns(text) == [
        Turn("text", "First "),
        Turn("call", 'calculator({"expression": "2+2"})'),
        Turn("answer", " then 4"),
    ]
    # A malformed call stays in the text, as TRL leaves it; nested a thousand deep too.
    for body in ("{not json", "[" * 1000 + "]" * 1000, '{"arguments": {}}'):
        assert text_turns(f"a <tool_call>{body}</tool_call> b") == [
            Turn("text", f"a <tool_call>{body}</tool_call> b")
        ]


def test_a_completion_without_tool_turns_reads_as_before():
    assert completion_view("<answer>4</answer>") == (
        '<span style="color:#7c3aed;font-weight:600">&lt;answer&gt;</span>'
        '<mark style="background:#fde68a;border-radius:3px;padding:0 2px" '
        'title="extracted answer">4</mark>'
        '<span style="color:#7c3aed;font-weight:600">&lt;/answer&gt;</span>'
    )
    assert 'class="turn' not in completion_view("no calls", conversation=None)
    plain = [{"role": "assistant", "content": "just <answer>4</answer>"}]
    assert completion_view(plain) == completion_view("just <answer>4</answer>")


def test_long_turns_are_cut():
    for kind in ("text", "call", "result", "answer"):
        page = turns_html([Turn(kind, "9" * 5000)])
        assert 2000 <= page.count("9") < 2100 and "…" in page, kind


def test_the_runs_samples_show_the_stored_conversation(ctx):
    folder = ctx.runs_root() / "grpo-agent001"
    folder.mkdir()
    run_store.create_run(
        ctx.db, run_id="grpo-agent001", algorithm="grpo", config={}, output_dir=str(folder)
    )
    sample = {"prompt": "user: 17*3?", "completion": "Let me compute.<answer>51</answer>"}
    sample_store.add_samples(
        ctx.db,
        "grpo-agent001",
        1,
        [{**sample, "total": 1.0, "trace": [], "extra": {"conversation": ROLLOUT}}, sample],
    )
    _, rows = run_actions.samples_table(ctx.db, LOCAL_VIEWER, "grpo-agent001", 1)
    assert "turn-result" in rows[0][2] and "calculator(" in rows[0][2]
    assert "turn-" not in rows[1][2]  # a sample without a conversation: its text


def test_the_preview_table_shows_calls_the_model_wrote():
    text = '<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>42'
    cache = PreviewCache(
        prompts=["6*7?"],
        completions=[text],
        answers=["42"],
        completion_ids=[[1, 2]],
        truncated=[False],
        groups=[0],
    )
    row = cache.rescore(preset("calculator agent")).rows()[0]
    assert "calculator({&quot;expression&quot;: &quot;6*7&quot;})" in row[3]
    assert "turn-answer" in row[3]
