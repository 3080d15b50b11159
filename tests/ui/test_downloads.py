"""Per-request download folders are swept within minutes, and client text has a size cap."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ui.shared.downloads import (
    DOWNLOAD_KEEP_S,
    MAX_DOWNLOAD_CHARS,
    DownloadTooLarge,
    write_download,
)


def test_download_folders_are_swept_and_client_text_is_capped(tmp_path):
    old = Path(write_download("name: a\n", "config.yaml", root=tmp_path))
    stale = time.time() - DOWNLOAD_KEEP_S - 1
    os.utime(old.parent, (stale, stale))
    new = Path(write_download("name: b\n", "config.yaml", root=tmp_path))
    assert new.read_text() == "name: b\n" and not old.parent.exists()
    with pytest.raises(DownloadTooLarge, match=r"config\.yaml: 1,000,001 characters"):
        write_download("x" * (MAX_DOWNLOAD_CHARS + 1), "config.yaml", root=tmp_path)
    assert len(list((tmp_path / "studio-downloads").iterdir())) == 1
