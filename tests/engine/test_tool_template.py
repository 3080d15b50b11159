"""The shipped model's chat template carries tool calls; other templates are checked by name."""

from __future__ import annotations

import pytest
from trl.chat_template_utils import (
    is_chat_template_prefix_preserving,
    parse_response,
    qwen2_5_chat_template,
    qwen3_template,
    supports_tool_calling,
)

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.models.char_tokenizer import CHAT_TEMPLATE, RESPONSE_TEMPLATE, build_char_tokenizer
from engine.tools.template import prepare_tool_tokenizer
from engine.tools.toolbox import toolbox_class
from engine.trainers.trl.build import build_trl_args

# The shipped template before tools: every conversation without tools must render the same.
BEFORE_TOOLS = (
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant'] -%}"
    "{{- raise_exception('role must be system, user or assistant, got ' + message['role']) -}}"
    "{%- endif -%}"
    "{{- '<|' + message['role'] + '|>' + message['content'] -}}"
    "{%- if not (continue_final_message and loop.last) -%}{{- '<|end|>' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"
)
CALL = {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "17*3"}}}


@pytest.fixture
def tokenizer():
    return build_char_tokenizer()


def tools():
    return [toolbox_class(["calculator"], 2)().calculator]


@pytest.mark.parametrize(
    ("messages", "options"),
    [
        ([{"role": "user", "content": "What is 7 + 5?"}], {"add_generation_prompt": True}),
        (
            [
                {"role": "system", "content": "Think, then answer."},
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "<answer>1</answer>"},
            ],
            {},
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>"}],
            {"continue_final_message": True},
        ),
    ],
)
def test_conversations_without_tools_render_as_before(tokenizer, messages, options):
    new = tokenizer.apply_chat_template(messages, tokenize=False, **options)
    old = tokenizer.apply_chat_template(
        messages, tokenize=False, chat_template=BEFORE_TOOLS, **options
    )
    assert new == old


def test_the_shipped_template_renders_a_whole_tool_exchange(tokenizer):
    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    text = tokenizer.apply_chat_template(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "What is 17*3?"},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "name": "calculator", "content": "51"},
        ],
        tools=tools(),
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == (
        "<|system|>S\n\nTools: calculator(expression). Call one as <tool_call>"
        '{"name": ..., "arguments": {...}}</tool_call><|end|><|user|>What is 17*3?<|end|>'
        '<|assistant|><tool_call>{"name": "calculator", "arguments": {"expression": "17*3"}}'
        "</tool_call><|end|><|user|><tool_response>51</tool_response><|end|><|assistant|>"
    )
    with pytest.raises(Exception, match="role must be system, user, assistant or tool"):
        tokenizer.apply_chat_template([{"role": "robot", "content": "x"}], tokenize=False)


def test_trl_parses_the_shipped_models_calls_and_keeps_malformed_ones_as_text(tokenizer):
    prepare_tool_tokenizer(tokenizer, "default")
    assert tokenizer.response_template == RESPONSE_TEMPLATE
    prefix = tokenizer.apply_chat_template(
        [{"role": "user", "content": "q"}], tokenize=True, add_generation_prompt=True
    )

    def parse(text: str) -> dict:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        return parse_response(tokenizer, ids, prefix=prefix, tools=tools())

    call = parse(
        'Let me compute.<tool_call>{"name": "calculator", "arguments": {"expression": "17*3"}}'
        "</tool_call><|end|>"
    )
    assert call == {"role": "assistant", "content": "Let me compute.", "tool_calls": [CALL]}
    assert parse("<answer>51</answer><|end|>") == {
        "role": "assistant",
        "content": "<answer>51</answer>",
    }
    broken = parse('<tool_call>{"name": calc</tool_call><|end|>')
    assert broken == {"role": "assistant", "content": '<tool_call>{"name": calc</tool_call>'}


def test_a_call_nested_thousands_deep_is_lost_alone_not_the_run(tokenizer):
    prepare_tool_tokenizer(tokenizer, "default")
    prepare_tool_tokenizer(tokenizer, "default")  # twice (a retried run): wrapped once
    prefix = tokenizer.apply_chat_template(
        [{"role": "user", "content": "q"}], tokenize=True, add_generation_prompt=True
    )
    nested = "[" * 5000 + "]" * 5000
    text = (
        f'<tool_call>{{"name": "calculator", "arguments": {{"expression": {nested}}}}}</tool_call>'
    )
    ids = tokenizer(text + "<|end|>", add_special_tokens=False)["input_ids"]
    assert parse_response(tokenizer, ids, prefix=prefix) == {"role": "assistant", "content": text}


def test_a_qwen25_template_gets_trls_response_template(tokenizer):
    tokenizer.chat_template = qwen2_5_chat_template
    prepare_tool_tokenizer(tokenizer, "Qwen/Qwen2.5-0.5B-Instruct")
    assert tokenizer.response_template == qwen3_template  # TRL maps Qwen2.5 to it


def test_a_template_without_tool_turns_is_refused_by_name(tokenizer):
    tokenizer.chat_template = BEFORE_TOOLS
    with pytest.raises(ConfigError) as err:
        prepare_tool_tokenizer(tokenizer, "my/plain-model")
    assert err.value.field == "tools.builtin"
    assert "chat template of my/plain-model cannot render tool calls" in err.value.reason
    assert "Qwen2.5/Qwen3-style" in err.value.reason


def test_a_template_trl_cannot_parse_is_refused_by_name(tokenizer):
    tokenizer.chat_template = CHAT_TEMPLATE.replace("<tool_call>{", "<tool_call> {")
    with pytest.raises(ConfigError, match="TRL cannot read tool calls back from the chat template"):
        prepare_tool_tokenizer(tokenizer, "my/custom")


def test_grpo_gets_the_call_budget_as_its_tool_iterations(tmp_path):
    config = RunConfig.from_dict({"tools": {"builtin": ["calculator"], "max_tool_calls": 3}})
    assert build_trl_args(config, str(tmp_path)).max_tool_calling_iterations == 3
    assert build_trl_args(RunConfig(), str(tmp_path)).max_tool_calling_iterations is None
