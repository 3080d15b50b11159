"""Short status lines for the page: success, warning and hint, styled by ``ui.factory.CSS``.

Messages are Markdown; text that comes from users or errors is HTML-escaped first, so a
``<think>`` inside an error message shows as text instead of vanishing as a tag.
"""

from __future__ import annotations

import html
import re

_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def escape(text: object) -> str:
    return html.escape(str(text), quote=False)


def escape_markdown(text: object) -> str:
    """User text shown as itself inside Markdown: HTML-escaped, and Markdown punctuation
    backslashed, so a tag or note cannot make a link, a heading or emphasis."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", escape(text))


def ok(markdown: str) -> str:
    return f'<span class="msg-ok">✔</span> {markdown}'


def warn(markdown: str) -> str:
    return f'<span class="msg-warn">▲</span> {markdown}'


def hint(markdown: str) -> str:
    return f'<span class="msg-hint">ℹ</span> {markdown}'
