"""An Ollama ``Modelfile`` for an exported GGUF: prompt template and stop tokens from the
tokenizer.

Ollama templates are Go templates, the tokenizer's chat template is Jinja: rather than translate
Jinja, the template is rendered once per role around a marker, and what surrounds the marker
becomes that role's prefix and suffix (``<|user|>`` and ``<|end|>`` for the default model). This
is exact for templates that wrap each message independently (ours, ChatML/Qwen2, Llama 3);
templates with cross-message logic keep their per-message wrapping only.
"""

from __future__ import annotations

import logging
import re
from typing import Any

logger = logging.getLogger(__name__)

MARKER = "\x00studio-marker\x00"
ROLES = ("system", "user", "assistant")


def role_wrappers(tokenizer: Any) -> tuple[dict[str, tuple[str, str]], str]:
    """``({role: (prefix, suffix)}, generation_prompt)`` read off the chat template."""
    wrappers = {}
    for role in ROLES:
        try:
            text = tokenizer.apply_chat_template(
                [{"role": role, "content": MARKER}], tokenize=False
            )
        except Exception:  # templates may refuse a lone system or assistant turn
            continue
        if MARKER in text:
            pre, post = text.split(MARKER, 1)
            wrappers[role] = (pre, post)
    user = [{"role": "user", "content": MARKER}]
    plain = tokenizer.apply_chat_template(user, tokenize=False)
    prompted = tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
    generation = prompted[len(plain) :] if prompted.startswith(plain) else ""
    return wrappers, generation


_GO_SPECIAL = re.compile(r'\{\{|"')


def _go(text: str) -> str:
    """Literal text inside the Modelfile's Go template: ``{{`` opens an action and a ``"``
    could close the triple-quoted ``TEMPLATE`` (a chat template holding three quotes and then a
    ``FROM`` line would add that line to the Modelfile), so both are printed by template
    expressions instead."""
    return _GO_SPECIAL.sub(lambda m: '{{ "{{" }}' if m.group() == "{{" else '{{ "\\"" }}', text)


def stop_tokens(tokenizer: Any) -> list[str]:
    """The end-of-sequence token and the chat role tokens: where a reply ends."""
    stops = [tokenizer.eos_token] if tokenizer.eos_token else []
    skip = {tokenizer.pad_token, tokenizer.unk_token, tokenizer.bos_token}
    for token in tokenizer.all_special_tokens:
        if token not in stops and token not in skip:
            stops.append(token)
    return stops


def modelfile(gguf_name: str, tokenizer: Any, temperature: float = 0.8) -> str:
    """The ``Modelfile`` text for ``gguf_name`` (a file beside it)."""
    wrappers, generation = role_wrappers(tokenizer)
    lines = [f"FROM ./{gguf_name}", ""]
    if wrappers:
        branches = []
        for i, (role, (pre, post)) in enumerate(wrappers.items()):
            keyword = "if" if i == 0 else "else if"
            branches.append(
                f'{{{{- {keyword} eq .Role "{role}" }}}}{_go(pre)}{{{{ .Content }}}}{_go(post)}'
            )
        template = (
            "{{- range .Messages }}" + "".join(branches) + "{{- end }}{{- end }}" + _go(generation)
        )
        lines.append(f'TEMPLATE """{template}"""')
    for stop in stop_tokens(tokenizer):
        if any(c in stop for c in '"\\\n\r'):  # cannot be written inside "..." as it is
            logger.warning("stop token %r left out of the Modelfile", stop)
            continue
        lines.append(f'PARAMETER stop "{stop}"')
    lines.append(f"PARAMETER temperature {temperature:g}")
    return "\n".join(lines) + "\n"


def run_command(name: str) -> str:
    """The one command that registers and starts the model in Ollama."""
    return f"ollama create {name} -f Modelfile && ollama run {name}"
