"""How a row's prompt becomes the text a model reads: its chat template, or plain text.

Rows carry chat prompts (``[{"role", "content"}, ...]``). A tokenizer with a ``chat_template``
renders them itself; a base model's tokenizer has none, and TRL then fails the run
("Cannot use chat template functions because tokenizer.chat_template is not set"). Such models
get the plain question-answer layout of lm-evaluation-harness's GSM8K task
(``doc_to_text: "Question: {{question}}\\nAnswer:"``), with any system message as a preamble:

    Put your steps in <think></think> and the result in <answer></answer>.

    Question: What is 7 plus 5?
    Answer:

The same text is used by the preview, evaluation, PPO and, as plain string prompts, by TRL's
GRPO and RLOO, so a model sees identical prompts everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Prompt = str | Sequence[dict[str, str]]

CHAT_TEMPLATE = "chat template"
PLAIN_TEXT = "plain text"


def has_chat_template(tokenizer: Any) -> bool:
    """True when the tokenizer renders chat messages itself."""
    return bool(getattr(tokenizer, "chat_template", None))


def prompt_format(tokenizer: Any) -> str:
    """``"chat template"`` or ``"plain text"``: how chat prompts reach this model."""
    return CHAT_TEMPLATE if has_chat_template(tokenizer) else PLAIN_TEXT


def check_messages(prompt: Sequence[Any]) -> list[dict[str, str]]:
    """The prompt as a list of messages; ``ValueError`` naming the first malformed one."""
    messages = list(prompt)
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"prompt message {i} must be a dict with 'role' and 'content'")
    return messages


def plain_prompt(prompt: Prompt) -> str:
    """A chat prompt in the plain "Question: ... Answer:" layout (strings pass through)."""
    if isinstance(prompt, str):
        return prompt
    messages = check_messages(prompt)
    # an opened answer (a prefilled "<think>") is the text the model writes on from
    opening = str(messages.pop()["content"]).lstrip() if continues_answer(messages) else ""
    parts = []
    for m in messages:
        content = str(m["content"]).strip()
        if m["role"] == "user":
            parts.append(f"Question: {content}\n")
        elif m["role"] == "assistant":
            parts.append(f"Answer: {content}\n\n")
        else:  # system (or any other role): a preamble paragraph
            parts.append(f"{content}\n\n")
    return "".join(parts) + ("Answer: " + opening if opening else "Answer:")


def continues_answer(messages: Sequence[dict[str, str]]) -> bool:
    """Whether the prompt ends with the opening of the model's answer (an assistant message,
    e.g. a prefilled ``<think>``) that the model continues, rather than with a question."""
    return bool(messages) and messages[-1]["role"] == "assistant"


def render_prompt(tokenizer: Any, prompt: Prompt) -> str:
    """Prompt text as the model sees it: chat prompts through the tokenizer's chat template
    with the generation prompt appended (or, ending with an assistant message, that message
    left open), or :func:`plain_prompt` when it has none. Plain strings pass through."""
    if isinstance(prompt, str):
        return prompt
    messages = check_messages(prompt)
    if not has_chat_template(tokenizer):
        return plain_prompt(messages)
    # TRL's rule (trl/data_utils.py, maybe_apply_chat_template): a final assistant message is
    # continued, any other gets the generation prompt, so every path renders alike.
    go_on = continues_answer(messages)
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=not go_on, continue_final_message=go_on
    )


def adds_special_tokens(tokenizer: Any, prompt: Prompt) -> bool:
    """Whether tokenizing the rendered prompt adds the tokenizer's special tokens (BOS): chat
    templates write their own; plain text gets them, as TRL tokenizes string prompts."""
    return isinstance(prompt, str) or not has_chat_template(tokenizer)


def for_trainer(tokenizer: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose prompts TRL can use with this tokenizer: unchanged with a chat template,
    else each chat prompt rendered to plain text (TRL then treats them as plain prompts)."""
    if has_chat_template(tokenizer):
        return rows
    return [{**row, "prompt": plain_prompt(row["prompt"])} for row in rows]
