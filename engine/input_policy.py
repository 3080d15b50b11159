"""What a run started from the web may read: data files, dataset ids, model folders, hub token.

The CLI trusts the operator's own config files. A visitor of a shared dashboard is not trusted:
the web entry points (the Train form, ``/start_run``, the Preview tab) pass an
:class:`InputPolicy` to the preflight, which refuses, naming the field:

- a data file outside the uploads folder of the data dir and the folders the operator lists in
  ``STUDIO_DATA_ROOTS`` (symlinks are resolved first; ``..`` is refused outright);
- a ``source: hub`` dataset that is not a hub id (``owner/name``), so no local folder loads;
- a ``python`` reward component's code file outside those same folders (code comes from the
  editor instead);
- a model that is neither a listed alias nor a hub id, unless it lies under a folder listed in
  ``STUDIO_MODEL_ROOTS``; the refusal reads the same whether or not the path exists.

Stored uploads take at most ``STUDIO_MAX_UPLOADS_MB`` (2048) MiB together: past it, copies no
run names are removed oldest first, and if that frees too little the upload is refused.

Runs started from the web download from the hub without the server's token
(``HF_TOKEN`` is not passed on), so a Space owner's private or gated repos stay private, unless
the operator sets ``STUDIO_VISITOR_HUB_TOKEN=1``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.config.fields import ConfigError
from engine.data.datasets import FILE_TYPES, DataSpec
from engine.models.loading import DEFAULT_MODEL_ALIAS, ENGLISH_MODEL_ALIAS, ModelSpec
from engine.run.layout import CONFIG_FILE, NO_HUB_TOKEN_MARKER
from rewards.hub_ids import is_hub_id
from rewards.spec import RewardSpec
from storage.paths import RUNS_DIR

UPLOADS_DIR = "uploads"
DATA_ROOTS_ENV = "STUDIO_DATA_ROOTS"
MODEL_ROOTS_ENV = "STUDIO_MODEL_ROOTS"
VISITOR_HUB_TOKEN_ENV = "STUDIO_VISITOR_HUB_TOKEN"
UPLOADS_QUOTA_ENV = "STUDIO_MAX_UPLOADS_MB"
DEFAULT_UPLOADS_QUOTA_MB = 2048
#: Environment variables that carry the server's hub token (huggingface_hub reads them).
HUB_TOKEN_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
MODEL_ALIASES = (DEFAULT_MODEL_ALIAS, ENGLISH_MODEL_ALIAS)
_TRUE = ("1", "true", "yes", "on")
# Stored uploads are named by the first 32 hex digits of their SHA-256 and their suffix.
_STORED_NAME = re.compile(r"[0-9a-f]{32}\.[a-z]+")


def is_web_hub_id(name: str) -> bool:
    """``owner/name`` as the hub spells repo ids (:func:`rewards.hub_ids.is_hub_id`); never a
    path that exists here."""
    if not is_hub_id(name):
        return False
    # A relative path that exists would load as a local folder instead of the hub repo.
    return not Path(name).exists() and not (Path(__file__).resolve().parents[1] / name).exists()


def _roots(env: Mapping[str, str], name: str) -> tuple[Path, ...]:
    raw = env.get(name, "")
    parts = [p.strip() for chunk in raw.split(os.pathsep) for p in chunk.split(",")]
    return tuple(Path(p).expanduser().resolve() for p in parts if p)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


@dataclass(frozen=True)
class InputPolicy:
    """The limits on a run's inputs for one web app (see the module docstring).

    Attributes:
        uploads: where the app stores uploaded data files (``<data dir>/uploads``).
        data_roots: further folders whose data files visitors may name.
        model_roots: folders whose model folders visitors may name.
        hub_token: whether visitors' runs may use the server's hub token.
        uploads_quota: most bytes the stored uploads may take together.
    """

    uploads: Path
    data_roots: tuple[Path, ...] = ()
    model_roots: tuple[Path, ...] = ()
    hub_token: bool = False
    uploads_quota: int = DEFAULT_UPLOADS_QUOTA_MB * 2**20

    @classmethod
    def for_web(cls, data_dir: str | Path, env: Mapping[str, str] | None = None) -> InputPolicy:
        env = os.environ if env is None else env
        return cls(
            uploads=(Path(data_dir) / UPLOADS_DIR).resolve(),
            data_roots=_roots(env, DATA_ROOTS_ENV),
            model_roots=_roots(env, MODEL_ROOTS_ENV),
            hub_token=env.get(VISITOR_HUB_TOKEN_ENV, "").strip().lower() in _TRUE,
            uploads_quota=_megabytes(env, UPLOADS_QUOTA_ENV, DEFAULT_UPLOADS_QUOTA_MB) * 2**20,
        )

    # ---- data --------------------------------------------------------------------------------
    def check_data(self, spec: DataSpec) -> None:
        """Raise ``ConfigError`` on ``data.path`` for a file or dataset a visitor may not use."""
        if spec.source == "hub" and not is_web_hub_id(str(spec.path).strip()):
            raise ConfigError(
                "data.path",
                "must be a Hugging Face dataset id (owner/name: letters, digits, '-', '_', '.'); "
                "to use your own file, upload it",
            )
        if spec.source == "file" and not self.file_allowed(str(spec.path)):
            where = f" or a file under the folders in {DATA_ROOTS_ENV}" if self.data_roots else ""
            raise ConfigError(
                "data.path",
                f"must be a file uploaded here (the form's file input){where}; other server "
                "paths are not readable from the web",
            )

    def file_allowed(self, path: str) -> bool:
        """Whether ``path`` resolves (symlinks followed) inside the uploads or a data root."""
        given = Path(path).expanduser()
        if ".." in given.parts:
            return False
        try:
            resolved = given.resolve()
        except (OSError, RuntimeError):  # a symlink loop
            return False
        return _inside(resolved, (self.uploads, *self.data_roots))

    def is_upload(self, path: str) -> bool:
        """Whether ``path`` is a file the user uploaded (their own data: its columns may show)."""
        try:
            return _inside(Path(path).resolve(), (self.uploads,))
        except (OSError, RuntimeError):
            return False

    def store_upload(self, source: str | Path) -> Path:
        """Copy an uploaded file into the uploads folder under a name made from its content
        (the same file uploaded twice is stored once); returns the stored path."""
        source = Path(source)
        suffix = source.suffix.lower()
        if suffix not in FILE_TYPES:
            raise ConfigError(
                "data.path", f"the uploaded file must be one of {', '.join(FILE_TYPES)}"
            )
        stat = source.stat()  # the form asks on every change: hash each upload once
        key = (str(source), stat.st_size, stat.st_mtime_ns, self.uploads)
        stored = _stored_copy(*key, room=self._make_room)
        if not stored.exists():  # removed since: copy it again
            _stored_copy.cache_clear()
            stored = _stored_copy(*key, room=self._make_room)
        return stored

    def _make_room(self, size: int) -> None:
        """Free ``size`` bytes of the uploads quota: remove the oldest stored copies that no
        run's config names, then refuse if the quota still has no room."""
        stored = sorted(  # (mtime, size, path), oldest first: each file stat-ed once
            (st.st_mtime, st.st_size, p)
            for p in self.uploads.glob("*")
            if p.is_file() and (st := p.stat())
        )
        used = sum(size for _, size, _ in stored)
        if used + size <= self.uploads_quota:
            return
        named = _names_in_run_configs(self.uploads.parent / RUNS_DIR)
        for _, stored_size, path in stored:
            if path.name not in named:
                used -= stored_size
                path.unlink(missing_ok=True)
                if used + size <= self.uploads_quota:
                    return
        raise ConfigError(
            "data.path",
            f"the server's space for uploads is full ({self.uploads_quota // 2**20} MiB, "
            f"{UPLOADS_QUOTA_ENV}); the files there belong to runs",
        )

    # ---- reward code ---------------------------------------------------------------------------
    def check_reward(self, spec: RewardSpec) -> None:
        """Raise ``ConfigError`` on a ``python`` component's ``path`` outside the uploads, or a
        reward model's or local judge's model that :meth:`check_model` would refuse."""
        from rewards.components.reward_model import loaded_models

        for i, name in loaded_models(spec):
            try:
                self.check_model(ModelSpec(name_or_path=name))
            except ConfigError as err:
                raise ConfigError(f"reward.components[{i}].params.model", err.reason) from None
        for i, comp in enumerate(spec.components):
            path = comp.params.get("path", "") if comp.name == "python" else ""
            if path and not self.file_allowed(path):
                raise ConfigError(
                    f"reward.components[{i}].params.path",
                    "must be a file uploaded here; other server paths are not readable from the "
                    "web (paste the code into the code field instead)",
                )

    # ---- models ------------------------------------------------------------------------------
    def check_model(self, spec: ModelSpec) -> None:
        """Raise ``ConfigError`` on ``model.name_or_path`` for a model a visitor may not load.

        The message is the same for a path that exists and one that does not.
        """
        name = spec.name_or_path.strip()
        if name in MODEL_ALIASES or is_web_hub_id(name):
            return
        given = Path(name).expanduser()
        if self.model_roots and ".." not in given.parts and given.is_absolute():
            try:
                if _inside(given.resolve(), self.model_roots):
                    return
            except (OSError, RuntimeError):
                pass
        where = f" or a folder under {MODEL_ROOTS_ENV}" if self.model_roots else ""
        raise ConfigError(
            "model.name_or_path",
            "must be a Hugging Face model id (owner/name) or one of the listed models "
            f"({', '.join(MODEL_ALIASES)}){where}; other server paths are not loadable from "
            "the web",
        )

    # ---- hub token ---------------------------------------------------------------------------
    def mark_run(self, run_dir: Path) -> None:
        """Record with a run started from the web whether its worker may use the server's hub
        token: whichever process later starts it (the app, the CLI, a finishing worker) reads
        it from the run folder through :func:`worker_env`."""
        if not self.hub_token:
            (run_dir / NO_HUB_TOKEN_MARKER).touch()


def worker_env(run_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for the worker of ``run_dir``: without the server's hub token when the run was
    marked so by :meth:`InputPolicy.mark_run`."""
    out = dict(env)
    if (run_dir / NO_HUB_TOKEN_MARKER).exists():
        for name in HUB_TOKEN_ENVS:
            out.pop(name, None)
        # No token from the login file either (huggingface_hub's token=False for all calls).
        out["HF_HUB_DISABLE_IMPLICIT_TOKEN"] = "1"
    return out


def _megabytes(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = -1
    if value < 1:
        raise ConfigError(name, f"must be a positive whole number of MiB, got {raw!r}")
    return value


def _names_in_run_configs(runs: Path) -> set[str]:
    """Names of the stored uploads that some run's config refers to."""
    names: set[str] = set()
    for config in runs.glob(f"*/{CONFIG_FILE}"):
        try:
            names.update(_STORED_NAME.findall(config.read_text(errors="replace")))
        except OSError:
            continue
    return names


@functools.lru_cache(maxsize=64)
def _stored_copy(
    source: str, size: int, mtime_ns: int, uploads: Path, *, room: Callable[[int], None]
) -> Path:
    """The content-named copy of ``source`` in ``uploads`` (``size`` and ``mtime_ns`` key the
    cache, so a changed file is copied again); ``room(size)`` makes space for a new copy."""
    digest = hashlib.sha256()
    with open(source, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    uploads.mkdir(parents=True, exist_ok=True)
    target = uploads / f"{digest.hexdigest()[:32]}{Path(source).suffix.lower()}"
    if not target.exists():
        room(size)
        partial = target.with_name(target.name + ".part")
        shutil.copyfile(source, partial)
        os.replace(partial, target)  # never a half-copied file under the final name
    return target
