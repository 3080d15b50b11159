"""The page's chart scripts: ``chart_links.js`` (x-zoom and hover synced across a run's panels,
a chart expanded and back) and ``chart_memory.js`` (zoom and hidden series kept across redraws,
a CSV download per chart, charts drawn dark in the dark theme), which calls the first for each
figure drawn. Handed to ``launch(head=...)``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = (HERE / "chart_links.js", HERE / "chart_memory.js")  # the order they must run in


@cache
def chart_head() -> str:
    """The ``<head>`` HTML that installs the scripts before any chart is drawn."""
    return "".join(f"<script>\n{s.read_text(encoding='utf-8')}</script>" for s in SCRIPTS)
