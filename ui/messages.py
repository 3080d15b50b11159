"""Short status lines for the page: success, warning and hint, styled by ``ui.factory.CSS``.

Messages are Markdown; text that comes from users or errors is HTML-escaped first, so a
``<think>`` inside an error message shows as text instead of vanishing as a tag.
"""

from __future__ import annotations

import html


def escape(text: object) -> str:
    return html.escape(str(text), quote=False)


def ok(markdown: str) -> str:
    return f'<span class="msg-ok">✔</span> {markdown}'


def warn(markdown: str) -> str:
    return f'<span class="msg-warn">▲</span> {markdown}'


def hint(markdown: str) -> str:
    return f'<span class="msg-hint">ℹ</span> {markdown}'
