"""What a run started from the web may read: data files, dataset ids, model folders, hub token.

The CLI trusts the operator's own config files. A visitor of a shared dashboard is not trusted:
the web entry points (the Train form, ``/start_run``, the Preview tab) pass an
:class:`InputPolicy` to the preflight, which refuses, naming the field:

- a data file outside the uploads of the run's owner and the folders the operator lists in
  ``STUDIO_DATA_ROOTS`` (symlinks are resolved first; ``..`` is refused outright). Each owner's
  uploads live in their own folder, ``uploads/<hash of the owner key>/``
  (:meth:`InputPolicy.for_owner`): a stored upload's name (a content hash) shows in configs and
  exports, and must not let another visitor train on the file; admins may name any upload;
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

import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.data.datasets import DataSpec
from engine.data.files import FILE_TYPES
from engine.fields import ConfigError
from engine.models.specs import ENGLISH_MODEL_ALIAS, SHIPPED_MODELS, ModelSpec
from engine.runtime.layout import NO_HUB_TOKEN_MARKER
from rewards.input_guards.hub_ids import is_hub_id
from rewards.spec import RewardSpec
from storage.paths import db_path
from storage.runs import list_runs
from storage.sqlite.db import Database

UPLOADS_DIR = "uploads"
DATA_ROOTS_ENV = "STUDIO_DATA_ROOTS"
MODEL_ROOTS_ENV = "STUDIO_MODEL_ROOTS"
VISITOR_HUB_TOKEN_ENV = "STUDIO_VISITOR_HUB_TOKEN"
UPLOADS_QUOTA_ENV = "STUDIO_MAX_UPLOADS_MB"
OWNER_QUOTA_ENV = "STUDIO_MAX_UPLOADS_PER_USER_MB"
DEFAULT_OWNER_QUOTA_MB = 512
MAX_FILE_ROWS_ENV = "STUDIO_MAX_FILE_ROWS"
#: Most rows the web process reads of one data file (a preview, the head a run's check reads).
DEFAULT_MAX_FILE_ROWS = 100_000
DEFAULT_UPLOADS_QUOTA_MB = 2048
#: Environment variables that carry the server's hub token (huggingface_hub reads them).
HUB_TOKEN_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
MODEL_ALIASES = (*SHIPPED_MODELS, ENGLISH_MODEL_ALIAS)
_TRUE = ("1", "true", "yes", "on")
# Stored uploads are named by the first 32 hex digits of their SHA-256 and their suffix.
STORED_UPLOAD_NAME = re.compile(r"[0-9a-f]{32}\.[a-z]+")


def is_web_hub_id(name: str) -> bool:
    """``owner/name`` as the hub spells repo ids (:func:`rewards.input_guards.hub_ids.is_hub_id`);
    never a path that exists here."""
    if not is_hub_id(name):
        return False
    # A relative path that exists would load as a local folder instead of the hub repo.
    return not Path(name).exists() and not (Path(__file__).resolve().parents[2] / name).exists()


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
        owner: the owner key whose uploads this policy reads and stores (``None``: every
            upload, the app-wide policy before a request names its user).
        admin: the owner reads every owner's uploads.
        data_roots: further folders whose data files visitors may name.
        model_roots: folders whose model folders visitors may name.
        hub_token: whether visitors' runs may use the server's hub token.
        uploads_quota: most bytes the stored uploads may take together.
        owner_quota: most bytes one owner's stored uploads may take (admins: no such cap).
        max_file_rows: most rows the web process reads of one data file (``DataSpec``'s
            ``max_file_rows``, counted while streaming; :meth:`bounded`).
    """

    uploads: Path
    owner: str | None = None
    admin: bool = False
    data_roots: tuple[Path, ...] = ()
    model_roots: tuple[Path, ...] = ()
    hub_token: bool = False
    uploads_quota: int = DEFAULT_UPLOADS_QUOTA_MB * 2**20
    owner_quota: int = DEFAULT_OWNER_QUOTA_MB * 2**20
    max_file_rows: int = DEFAULT_MAX_FILE_ROWS

    @classmethod
    def for_web(cls, data_dir: str | Path, env: Mapping[str, str] | None = None) -> InputPolicy:
        env = os.environ if env is None else env
        return cls(
            uploads=(Path(data_dir) / UPLOADS_DIR).resolve(),
            data_roots=_roots(env, DATA_ROOTS_ENV),
            model_roots=_roots(env, MODEL_ROOTS_ENV),
            hub_token=env.get(VISITOR_HUB_TOKEN_ENV, "").strip().lower() in _TRUE,
            uploads_quota=_megabytes(env, UPLOADS_QUOTA_ENV, DEFAULT_UPLOADS_QUOTA_MB) * 2**20,
            owner_quota=_megabytes(env, OWNER_QUOTA_ENV, DEFAULT_OWNER_QUOTA_MB) * 2**20,
            max_file_rows=_megabytes(env, MAX_FILE_ROWS_ENV, DEFAULT_MAX_FILE_ROWS),
        )

    def for_owner(self, owner: str, *, admin: bool = False) -> InputPolicy:
        """This policy for the runs and uploads of ``owner`` (every upload for an admin)."""
        return dataclasses.replace(self, owner=owner, admin=admin)

    @property
    def own_uploads(self) -> Path:
        """Where this owner's uploads are stored: a folder per owner, named by a hash of the
        owner key (owner keys hold ':' and user names; the folder name must be neither)."""
        if self.owner is None:
            return self.uploads
        return self.uploads / hashlib.sha256(self.owner.encode()).hexdigest()[:24]

    @property
    def readable_uploads(self) -> Path:
        """The uploads this policy's runs may name: the owner's own, an admin's all."""
        return self.uploads if self.admin else self.own_uploads

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
                f"must be a file you uploaded here (the form's file input){where}; other "
                "server paths and other visitors' uploads are not readable from the web",
            )

    def bounded(self, spec: DataSpec) -> DataSpec:
        """``spec`` as the web process may read it: at most :attr:`max_file_rows` rows."""
        cap = min(spec.max_file_rows or self.max_file_rows, self.max_file_rows)
        return dataclasses.replace(spec, max_file_rows=cap)

    def file_allowed(self, path: str) -> bool:
        """Whether ``path`` resolves (symlinks followed) inside the owner's uploads or a data
        root."""
        given = Path(path).expanduser()
        if ".." in given.parts:
            return False
        try:
            resolved = given.resolve()
        except (OSError, RuntimeError):  # a symlink loop
            return False
        return _inside(resolved, (self.readable_uploads, *self.data_roots))

    def is_upload(self, path: str) -> bool:
        """Whether ``path`` is a file the user uploaded (their own data: its columns may show)."""
        try:
            return _inside(Path(path).resolve(), (self.readable_uploads,))
        except (OSError, RuntimeError):
            return False

    def store_upload(self, source: str | Path) -> Path:
        """Copy an uploaded file into the owner's uploads folder under a name made from its
        content (the same file uploaded twice by one owner is stored once); returns the stored
        path."""
        source = Path(source)
        suffix = source.suffix.lower()
        if suffix not in FILE_TYPES:
            raise ConfigError(
                "data.path", f"the uploaded file must be one of {', '.join(FILE_TYPES)}"
            )
        stat = source.stat()  # the form asks on every change: hash each upload once
        key = (str(source), stat.st_size, stat.st_mtime_ns, self.own_uploads)
        stored = _stored_copy(*key, room=self._make_room)
        if not stored.exists():  # removed since: copy it again
            _stored_copy.cache_clear()
            stored = _stored_copy(*key, room=self._make_room)
        return stored

    def _make_room(self, size: int) -> None:
        """Free ``size`` bytes of the owner's quota, then of the quota of all uploads: remove
        the oldest stored copies that no run's config names, then refuse if there is still no
        room."""
        # Which stored files runs name: read from every run's config, so only when needed.
        named = functools.cache(lambda: _names_in_run_configs(self.uploads.parent))
        scoped = self.owner is not None and not self.admin
        if scoped and not _evict(self.own_uploads, size, self.owner_quota, named):
            raise ConfigError(
                "data.path",
                f"your uploads take the {self.owner_quota // 2**20} MiB one user may keep "
                f"here ({OWNER_QUOTA_ENV}); the files there belong to your runs: delete a run "
                "to free its file",
            )
        if not _evict(self.uploads, size, self.uploads_quota, named):
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
    """A positive whole number setting (MiB, or rows) from ``env``."""
    raw = env.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = -1
    if value < 1:
        raise ConfigError(name, f"must be a positive whole number, got {raw!r}")
    return value


def _evict(folder: Path, size: int, quota: int, named: Callable[[], set[str]]) -> bool:
    """Make ``size`` bytes of room under ``quota`` in ``folder`` (all its subfolders), removing
    the oldest files no run names; False when that is not enough."""
    if not folder.exists():
        return size <= quota
    stored = sorted(  # (mtime, size, path), oldest first: each file stat-ed once
        (st.st_mtime, st.st_size, p) for p in folder.rglob("*") if p.is_file() and (st := p.stat())
    )
    used = sum(size for _, size, _ in stored)
    for _, stored_size, path in stored:
        if used + size <= quota:
            return True
        if path.name not in named():
            used -= stored_size
            path.unlink(missing_ok=True)
    return used + size <= quota


def _names_in_run_configs(data_dir: Path) -> set[str]:
    """Names of the stored uploads that some run's recorded config (its database row) refers
    to."""
    path = db_path(data_dir)
    if not path.is_file():  # no run recorded yet, and no database to make for asking
        return set()
    with Database(path) as db:
        runs = list_runs(db)
    return {name for r in runs for name in STORED_UPLOAD_NAME.findall(json.dumps(r.config))}


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
