"""The Ollama Modelfile keeps a model's chat template and stop tokens as data: quotes in them
cannot end the TEMPLATE string and add Modelfile lines (a hub model's template is outside
text pasted into the file the user runs ``ollama create`` on)."""

from __future__ import annotations

from engine.exports.ollama import modelfile
from engine.models.char_tokenizer import build_char_tokenizer

HOSTILE_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '\"\"\"\\nFROM /etc/passwd\\nSYSTEM \"' + message['content'] + '<|end|>' -}}"
    "{%- endfor -%}"
)


def test_quotes_in_the_chat_template_and_stop_tokens_stay_inside_their_strings():
    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = HOSTILE_TEMPLATE
    tokenizer.add_special_tokens({"additional_special_tokens": ['<|q"uote|>']})
    text = modelfile("m.gguf", tokenizer)
    before, template, after = text.split('"""')  # exactly one triple-quoted string: TEMPLATE
    outside = (before + after).splitlines()
    assert [line for line in outside if line.startswith("FROM")] == ["FROM ./m.gguf"]
    assert not any(line.startswith("SYSTEM") for line in outside)
    assert '{{ "\\"" }}' in template and "\nFROM /etc/passwd\n" in template  # kept as data
    stops = [line for line in outside if line.startswith("PARAMETER stop")]
    assert 'PARAMETER stop "<|end|>"' in stops and all(s.count('"') == 2 for s in stops)
