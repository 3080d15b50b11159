"""The page's chart script (``chart_memory.js``): zoom and hidden series kept across redraws,
a CSV download per chart, charts drawn dark in the dark theme. Handed to ``launch(head=...)``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

SCRIPT = Path(__file__).with_name("chart_memory.js")


@cache
def chart_head() -> str:
    """The ``<head>`` HTML that installs the script before any chart is drawn."""
    return f"<script>\n{SCRIPT.read_text(encoding='utf-8')}</script>"
