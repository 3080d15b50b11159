"""What the reward lab's panels (Preview, Runs) share: their error type and spec uploads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewards.spec import MAX_SPEC_CHARS


class LabError(ValueError):
    """A lab input the page shows next to the panel; the message names the input."""


def read_spec_upload(file: Any) -> str:
    """The text of an uploaded spec file (at most the Design tab's import size, UTF-8)."""
    path = Path(getattr(file, "name", file))
    if path.stat().st_size > MAX_SPEC_CHARS:
        raise LabError(f"the file is over {MAX_SPEC_CHARS:,} bytes; is it a spec?")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LabError("the file is not UTF-8 text") from None
