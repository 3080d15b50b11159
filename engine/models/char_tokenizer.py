"""Character-level chat tokenizer for the shipped default model.

One token per printable ASCII character plus newline, and a handful of special tokens for the
chat roles. ``<think>``/``<answer>`` are ordinary text (spelled character by character): TRL
decodes completions with ``skip_special_tokens=True``, which would strip special tags.

Chat layout (no separators, to keep contexts short for a character model)::

    <|system|>...<|end|><|user|>...<|end|><|assistant|>...<|end|>

``<|end|>`` closes every turn and is the end-of-sequence token, so generation stops there.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD_TOKEN = "<pad>"
UNK_TOKEN = "<unk>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "<|end|>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, BOS_TOKEN, EOS_TOKEN, *ROLE_TOKENS)
CHARACTERS = ("\n", *(chr(c) for c in range(32, 127)))

# Jinja chat template read by transformers (``tokenizer.apply_chat_template``) and by TRL for
# conversational prompts. Without tools it renders exactly the layout above. With tools (TRL's
# agent rollouts) it follows Qwen2.5's tool layout in fewer characters, since every character is
# a token of a 512-position model: the tools as one line of the system turn, a call as
# ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in the assistant turn, a result as
# a user turn ``<tool_response>...</tool_response>`` (no new special tokens). Other roles are
# rejected loudly.
CHAT_TEMPLATE = (
    "{%- if tools -%}"
    "{%- set ns = namespace(names=[]) -%}"
    "{%- for tool in tools -%}"
    "{%- set f = tool['function'] if tool['function'] is defined else tool -%}"
    "{%- set ns.names = ns.names + [f['name'] + '(' + (f['parameters']['properties'] | list"
    " | join(', ')) + ')'] -%}"
    "{%- endfor -%}"
    "{%- set tool_text = 'Tools: ' + (ns.names | join(', ')) + '. Call one as <tool_call>"
    '{"name": ..., "arguments": {...}}</tool_call>\' -%}'
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant', 'tool'] -%}"
    "{{- raise_exception('role must be system, user, assistant or tool, got ' + message['role'])"
    " -}}"
    "{%- endif -%}"
    "{%- if tools and loop.first and message['role'] != 'system' -%}"
    "{{- '<|system|>' + tool_text + '<|end|>' -}}"
    "{%- endif -%}"
    "{%- if message['role'] == 'tool' -%}"
    "{{- '<|user|><tool_response>' + message['content'] + '</tool_response>' -}}"
    "{%- else -%}"
    "{{- '<|' + message['role'] + '|>' + (message['content'] or '') -}}"
    "{%- endif -%}"
    "{%- if tools and loop.first and message['role'] == 'system' -%}"
    "{{- '\\n\\n' + tool_text -}}"
    "{%- endif -%}"
    "{%- if message['tool_calls'] is defined and message['tool_calls'] -%}"
    "{%- for call in message['tool_calls'] -%}"
    "{%- set f = call['function'] if call['function'] is defined else call -%}"
    "{{- '<tool_call>{\"name\": \"' + f['name'] + '\", \"arguments\": ' -}}"
    "{%- if f['arguments'] is string -%}{{- f['arguments'] -}}"
    "{%- else -%}{{- f['arguments'] | tojson -}}{%- endif -%}"
    "{{- '}</tool_call>' -}}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{%- if not (continue_final_message and loop.last) -%}{{- '<|end|>' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"
)

# How TRL reads a sampled assistant turn back into a message with ``tool_calls``
# (transformers' ``response_template``, the shape of TRL's ``qwen3_template``).
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|end\|>\s*", "content": "text"},
    },
}


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    """Build the character tokenizer (104 tokens) wrapped as a transformers fast tokenizer.

    Characters outside printable ASCII map to ``<unk>``; the decoder joins characters without
    inserting spaces, so ``decode(encode(text)) == text`` for ASCII text.
    """
    vocab = {tok: i for i, tok in enumerate((*SPECIAL_TOKENS, *CHARACTERS))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK_TOKEN))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        unk_token=UNK_TOKEN,
        additional_special_tokens=list(ROLE_TOKENS),
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
