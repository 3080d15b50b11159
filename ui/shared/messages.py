"""Short status lines for the page: success, warning and hint, styled by ``ui.factory.CSS``.

Messages are Markdown; text that comes from users or errors goes through :func:`escape` first,
so a ``<think>`` inside an error message shows as text instead of vanishing as a tag, and a run
name or a column name like ``![x](https://elsewhere/pixel)`` shows as those characters instead
of loading an image or making a link in the viewer's browser.
"""

from __future__ import annotations

import html
import re

# Markdown's punctuation (CommonMark lets a backslash escape any ASCII punctuation): emphasis,
# links and images, headings, lists, tables, code, and ':' so no bare URL becomes a link. '&'
# and ';' are left alone: they belong to the HTML entities escaped first.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:>])")


def escape(text: object) -> str:
    """``text`` shown as itself in Markdown: HTML-escaped, then Markdown punctuation
    backslash-escaped. Not for code spans (backslashes show there)."""
    return _MARKDOWN.sub(r"\\\1", html.escape(str(text), quote=False))


def ok(markdown: str) -> str:
    return f'<span class="msg-ok">✔</span> {markdown}'


def warn(markdown: str) -> str:
    return f'<span class="msg-warn">▲</span> {markdown}'


def hint(markdown: str) -> str:
    return f'<span class="msg-hint">ℹ</span> {markdown}'
