"""Where Reward Studio keeps its data: the studio database and one folder per run.

The data dir is chosen once, in this order:

1. the ``--data-dir`` command-line value;
2. the ``STUDIO_DATA_DIR`` environment variable;
3. ``/data/studio`` when ``/data`` exists: the persistent storage of a Hugging Face Space, so
   runs survive restarts there (``STUDIO_PERSISTENT_ROOT`` names another root, e.g. in tests);
4. ``./studio-data`` in the current directory.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

ENV_VAR = "STUDIO_DATA_DIR"
SPACES_ROOT = Path("/data")
PERSISTENT_ROOT_ENV = "STUDIO_PERSISTENT_ROOT"
DEFAULT_DIR = "studio-data"
DB_FILE = "studio.db"
RUNS_DIR = "runs"


def resolve_data_dir(
    cli_value: str | os.PathLike[str] | None = None,
    *,
    environ: dict[str, str] | None = None,
    spaces_root: Path | None = None,
) -> Path:
    """The absolute data dir by the precedence above, created if missing.

    ``environ`` and ``spaces_root`` default to the real environment and ``/data``.
    An explicitly chosen dir (flag or variable) that cannot be created is an error naming its
    source; the ``/data`` rule falls back to ``./studio-data`` with a warning instead.
    """
    env = os.environ if environ is None else environ
    spaces_root = _spaces_root(env, spaces_root)
    if cli_value is not None and str(cli_value).strip():
        return _make_dir(Path(cli_value), "--data-dir")
    env_value = env.get(ENV_VAR, "").strip()
    if env_value:
        return _make_dir(Path(env_value), ENV_VAR)
    if spaces_root.is_dir():
        try:
            return _make_dir(spaces_root / "studio", f"{spaces_root} (persistent storage)")
        except ValueError as exc:
            logger.warning("%s; using ./%s instead, which may not persist", exc, DEFAULT_DIR)
    return _make_dir(Path(DEFAULT_DIR), "the default")


def persistence_note(
    data_dir: str | os.PathLike[str],
    *,
    environ: dict[str, str] | None = None,
    spaces_root: Path | None = None,
    show_path: bool = True,
) -> str:
    """One sentence on where runs are kept and whether they outlive a restart; the folder is
    named only with ``show_path`` (a public app's visitors are not told the server's paths).

    On a Hugging Face Space (``SPACE_ID`` is set) only ``/data`` survives restarts.
    """
    env = os.environ if environ is None else environ
    spaces_root = _spaces_root(env, spaces_root)
    where = Path(data_dir).resolve()
    saved = f"Runs are saved in {where}" if show_path else "Runs are saved on this server"
    if not env.get("SPACE_ID"):
        return f"{saved}."
    if where.is_relative_to(spaces_root.resolve()):
        return f"{saved}, on this Space's persistent storage."
    return (
        f"{saved}, which this Space loses when it restarts: turn on persistent storage in the "
        "Space's settings to keep them."
    )


def _spaces_root(env: dict[str, str] | os._Environ, given: Path | None) -> Path:
    if given is not None:
        return given
    return Path(env.get(PERSISTENT_ROOT_ENV, "").strip() or SPACES_ROOT)


def db_path(data_dir: str | os.PathLike[str]) -> Path:
    """The studio database file inside ``data_dir``."""
    return Path(data_dir) / DB_FILE


def runs_dir(data_dir: str | os.PathLike[str]) -> Path:
    """The folder holding one output folder per run (configs, checkpoints, logs), created."""
    path = Path(data_dir) / RUNS_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def _make_dir(path: Path, source: str) -> Path:
    path = path.expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise ValueError(f"data dir from {source}: {path} exists and is not a directory") from exc
    except OSError as exc:
        raise ValueError(
            f"data dir from {source}: cannot create {path} ({exc.strerror or exc})"
        ) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"data dir from {source}: {path} is not writable")
    return path
