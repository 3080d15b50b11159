"""An uploaded data file, checked as it arrives and named as the user named it.

The app stores an upload under a name made from its content (``engine.config.input_policy``),
so an error about the stored copy named ``3f9a….csv`` where the user uploaded ``broken.csv``.
:func:`check_upload` reads the first rows of the upload itself (Gradio's copy keeps the
uploaded name) when it arrives, and :func:`as_uploaded` names the upload in an error about its
stored copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.config.input_policy import DEFAULT_MAX_FILE_ROWS, STORED_UPLOAD_NAME
from engine.data.datasets import DatasetError
from engine.data.files import FileLimits, read_file
from engine.fields import ConfigError
from ui.shared.messages import escape, ok, warn

CHECK_ROWS = 200  # rows read at upload: enough to find a broken header or row early
CHECK_MAX_BYTES = 200_000_000  # the data spec's default max_file_mb
# The web process's row cap: a file whose metadata claims more is refused before any read.
CHECK_MAX_ROWS = DEFAULT_MAX_FILE_ROWS


def uploaded_path(file: Any) -> Path | None:
    """The path of a ``gr.File`` value (a path, or an object with ``.name``), or None."""
    path = getattr(file, "name", file)
    return Path(path) if isinstance(path, str) and path else None


def check_upload(file: Any) -> str:
    """A line for under the file input: what is wrong with the upload's first rows (naming the
    file as uploaded), that they read, or "" with no file."""
    path = uploaded_path(file)
    if path is None:
        return ""
    try:
        rows = read_file(path, FileLimits(CHECK_MAX_BYTES, CHECK_MAX_ROWS, CHECK_ROWS))
    except DatasetError as exc:
        return warn(escape(exc))
    except OSError as exc:
        return warn(escape(f"{path.name}: cannot be read ({exc.strerror or exc})"))
    if not rows:
        return warn(escape(f"dataset file {path.name!r} has no rows"))
    columns = ", ".join(sorted({key for row in rows for key in row}))
    return ok(escape(f"{path.name}: the first {len(rows)} rows read; columns: {columns}"))


def as_uploaded(message: str, file: Any) -> str:
    """``message`` with the stored copy's name replaced by the upload's own (unchanged when no
    file was uploaded)."""
    path = uploaded_path(file)
    return message if path is None else STORED_UPLOAD_NAME.sub(path.name, message)


def upload_named(exc: ConfigError, file: Any) -> ConfigError:
    """A data field's error naming the upload as uploaded (other errors as they are)."""
    if not (exc.field or "").startswith("data"):
        return exc
    return ConfigError(exc.field, as_uploaded(exc.reason, file))
