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
# conversational prompts. Roles other than system/user/assistant are rejected loudly.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant'] -%}"
    "{{- raise_exception('role must be system, user or assistant, got ' + message['role']) -}}"
    "{%- endif -%}"
    "{{- '<|' + message['role'] + '|>' + message['content'] -}}"
    "{%- if not (continue_final_message and loop.last) -%}{{- '<|end|>' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"
)


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
