"""Per-request download folders: what a visitor downloads is built into a fresh private folder
outside the data dir, which Gradio copies into its own cache when it serves the file.

Our folder is needed only until that copy is made, so folders older than
:data:`DOWNLOAD_KEEP_S` are swept each time a new one is made (minutes, not the hours Gradio's
cache keeps its copies). Text a client sent is written only up to :data:`MAX_DOWNLOAD_CHARS`.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

DOWNLOADS_DIR = "studio-downloads"
# Gradio copies a returned file into its cache before it answers: ours is needed for a moment.
DOWNLOAD_KEEP_S = 300.0
#: The most characters of client text one download writes (a config or spec is far smaller).
MAX_DOWNLOAD_CHARS = 1_000_000


class DownloadTooLarge(ValueError):
    """Client text over :data:`MAX_DOWNLOAD_CHARS`; the message says the sizes."""


def download_dir(root: Path | None = None) -> Path:
    """A fresh private folder for one download, outside the data dir; folders of earlier
    downloads older than :data:`DOWNLOAD_KEEP_S` are removed on the way."""
    root = Path(root or tempfile.gettempdir()) / DOWNLOADS_DIR
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    cutoff = time.time() - DOWNLOAD_KEEP_S
    for old in root.iterdir():
        try:
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:  # removed by a concurrent request
            pass
    return Path(tempfile.mkdtemp(dir=root))


def write_download(text: str, file_name: str, root: Path | None = None) -> str:
    """Write ``text`` to ``file_name`` in a fresh download folder and return its path.

    Raises:
        DownloadTooLarge: ``text`` is over :data:`MAX_DOWNLOAD_CHARS`.
    """
    if not isinstance(text, str) or len(text) > MAX_DOWNLOAD_CHARS:
        size = len(text) if isinstance(text, str) else 0
        raise DownloadTooLarge(
            f"{file_name}: {size:,} characters is over the {MAX_DOWNLOAD_CHARS:,} a download "
            "may hold"
        )
    path = download_dir(root) / file_name
    path.write_text(text, encoding="utf-8")
    return str(path)
