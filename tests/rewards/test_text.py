"""Prompts and completions as text: one helper each, for chat, typed-part and plain forms."""

from __future__ import annotations

from rewards.text import MAX_COMPLETION_CHARS, completion_text, prompt_text, question_text

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
