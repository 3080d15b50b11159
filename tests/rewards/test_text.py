"""Prompts and completions as text: one helper each, for chat, typed-part and plain forms."""

from __future__ import annotations

import pytest

from rewards.completions.text import (
    MAX_COMPLETION_CHARS,
    completion_text,
    prompt_text,
    question_text,
    system_text,
)

CHAT = [
    {"role": "system", "content": "Think first."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]},
]


def test_prompt_text_keeps_every_message_with_its_role():
    assert prompt_text(CHAT) == (
        "system: Think first.\nuser: What is 2+2?\nassistant: 4\nuser: And 3+3?"
    )
    assert prompt_text("plain prompt") == "plain prompt"
    assert prompt_text([{"role": "user", "content": None}]) == "user: "


def test_question_text_is_the_last_user_message():
    assert question_text(CHAT) == "And 3+3?"
    assert question_text("plain prompt") == "plain prompt"
    assert question_text([{"role": "system", "content": "a"}, {"content": "b"}]) == "a\nb"


def test_completion_text_reads_assistant_messages_and_is_bounded():
    chat = [{"role": "tool", "content": "x"}, {"role": "assistant", "content": "<answer>4"}]
    assert completion_text(chat) == "<answer>4"
    assert len(completion_text("a" * (MAX_COMPLETION_CHARS + 5))) == MAX_COMPLETION_CHARS


TYPED_SYSTEM = [
    {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
    "not a message",
    {"role": "user", "content": "Hi"},
]

#: prompt -> (prompt_text, question_text, system_text): the edge cases where the Playground's
#: and the judge's own readers used to answer differently.
EDGE_CASES = [
    (CHAT, (prompt_text(CHAT), "And 3+3?", "Think first.")),
    ("plain prompt", ("plain prompt", "plain prompt", None)),
    ("", ("", "", None)),
    ([], ("", "", None)),
    (None, ("", "", None)),
    (
        [{"role": "system", "content": "Rules."}, {"role": "assistant", "content": "Ok."}],
        ("system: Rules.\nassistant: Ok.", "Rules.\nOk.", "Rules."),  # no user turn
    ),
    (TYPED_SYSTEM, ("system: Be brief.\nuser: Hi", "Hi", "Be brief.")),
]


@pytest.mark.parametrize(("prompt", "expected"), EDGE_CASES)
def test_one_reader_each_for_the_whole_prompt_the_question_and_the_system_message(prompt, expected):
    assert (prompt_text(prompt), question_text(prompt), system_text(prompt)) == expected
