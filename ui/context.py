"""What every tab of the dashboard shares: the data dir, the database, the launcher, the settings.

One :class:`AppContext` is made per app (by :func:`ui.app.build_app`'s caller, never at import
time) and handed to each ``build_<tab>(ctx)``. Per-browser-session state lives in ``gr.State``
dataclasses inside the tabs; what is here is shared by every session.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from storage.db import Database
from storage.paths import db_path

logger = logging.getLogger(__name__)

AUTH_ENV = "STUDIO_AUTH"
USERNAME_ENV = "STUDIO_USERNAME"
PASSWORD_ENV = "STUDIO_PASSWORD"
DEMO_MAX_STEPS_ENV = "STUDIO_DEMO_MAX_STEPS"
DEMO_MAX_PARAMS_ENV = "STUDIO_DEMO_MAX_MODEL_PARAMS"
DEMO_MAX_PREVIEW_ENV = "STUDIO_DEMO_MAX_PREVIEW_SAMPLES"
SUPERVISE_SECONDS = 5.0


class SettingsError(ValueError):
    """An environment variable of the app holds a value it cannot use; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _positive_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(float(raw))
    except ValueError:
        raise SettingsError(name, f"must be a positive whole number, got {raw!r}") from None
    if value < 1:
        raise SettingsError(name, f"must be a positive whole number, got {raw!r}")
    return value


@dataclass(frozen=True)
class DemoLimits:
    """Caps for a public demo (a Space): unset fields mean no cap.

    Attributes:
        max_steps: the most training steps one run may ask for.
        max_model_params: the largest model (parameter count) the preview and training may load.
        max_preview_samples: the most completions one preview may generate (prompts x samples).
    """

    max_steps: int | None = None
    max_model_params: int | None = None
    max_preview_samples: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DemoLimits:
        env = os.environ if env is None else env
        return cls(
            max_steps=_positive_int(env, DEMO_MAX_STEPS_ENV),
            max_model_params=_positive_int(env, DEMO_MAX_PARAMS_ENV),
            max_preview_samples=_positive_int(env, DEMO_MAX_PREVIEW_ENV),
        )

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.max_steps, self.max_model_params))

    def describe(self) -> str:
        parts = []
        if self.max_steps is not None:
            parts.append(f"at most {self.max_steps} training steps per run")
        if self.max_model_params is not None:
            parts.append(f"models up to {self.max_model_params:,} parameters")
        if self.max_preview_samples is not None:
            parts.append(f"at most {self.max_preview_samples} completions per preview")
        return "Demo mode: " + ", ".join(parts) + "." if parts else ""


def auth_from_env(env: Mapping[str, str] | None = None) -> list[tuple[str, str]] | None:
    """Login pairs for ``launch(auth=...)`` from the environment, or ``None`` for no login.

    ``STUDIO_AUTH="alice:secret,bob:other"`` gives several users; ``STUDIO_USERNAME`` with
    ``STUDIO_PASSWORD`` gives one. On a Space, set them as secrets.
    """
    env = os.environ if env is None else env
    pairs: list[tuple[str, str]] = []
    raw = env.get(AUTH_ENV, "").strip()
    if raw:
        for i, item in enumerate(raw.split(",")):
            user, sep, password = item.strip().partition(":")
            if not sep or not user or not password:
                raise SettingsError(
                    AUTH_ENV, f"entry {i + 1} must read user:password, got {item.strip()!r}"
                )
            pairs.append((user, password))
    user, password = env.get(USERNAME_ENV, "").strip(), env.get(PASSWORD_ENV, "")
    if user or password:
        if not (user and password):
            raise SettingsError(
                USERNAME_ENV if not user else PASSWORD_ENV,
                f"set both {USERNAME_ENV} and {PASSWORD_ENV}, or neither",
            )
        pairs.append((user, password))
    return pairs or None


@dataclass
class AppContext:
    """Shared by every tab and session of one running app.

    Attributes:
        data_dir: where the studio database and the run folders are.
        demo: caps for a public demo.
        db: the studio database (opened on first use, closed by :meth:`close`).
        launcher: starts, stops, resumes and deletes runs (``engine.launcher.Launcher``).
    """

    data_dir: Path
    demo: DemoLimits = field(default_factory=DemoLimits)
    _supervisor: threading.Thread | None = field(default=None, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _model_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _models: dict[str, tuple[Any, Any]] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def db(self) -> Database:
        return Database(db_path(self.data_dir))

    @cached_property
    def input_policy(self) -> Any:
        """What visitors' runs and previews may read (``engine.input_policy.InputPolicy``)."""
        from engine.input_policy import InputPolicy

        return InputPolicy.for_web(self.data_dir)

    @cached_property
    def launcher(self) -> Any:
        from engine.launcher import Launcher

        return Launcher(self.data_dir, policy=self.input_policy)

    def runs_root(self) -> Path:
        from storage.paths import runs_dir

        return runs_dir(self.data_dir)

    # ---- models for the preview ---------------------------------------------------------
    def model(self, spec: Any) -> tuple[Any, Any]:
        """The (model, tokenizer) of a ``ModelSpec``, loaded once per spec and kept.

        Only the latest model stays loaded: a preview of a large model must not keep the
        previous one in memory.
        """
        from engine.models import load_model_and_tokenizer

        key = repr(spec)
        with self._model_lock:
            if key not in self._models:
                self.check_model_size(spec)
                self._models.clear()
                self._models[key] = load_model_and_tokenizer(spec)
            return self._models[key]

    def cached_tokenizer(self, key: str) -> Any:
        """``tokenize(text) -> ids`` of the loaded model with this key (``repr`` of its spec),
        or ``None`` when that model is no longer loaded."""
        with self._model_lock:
            loaded = self._models.get(key)
        if loaded is None:
            return None
        tokenizer = loaded[1]
        return lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]

    def start_run(self, config: Any) -> str:
        """Start (or queue) a ``RunConfig`` within the demo's caps; returns the run id.

        Raises:
            ConfigError: a field the run cannot start with (model size, model, data).
        """
        self.input_policy.check_model(config.model)  # before its size is read from a path
        self.check_model_size(config.model)
        return self.launcher.start(config)

    def check_model_size(self, spec: Any) -> None:
        """Refuse a model over the demo's size cap before anything is downloaded or loaded.

        Raises:
            ConfigError: on ``model.name_or_path``, saying the size and the cap.
        """
        cap = self.demo.max_model_params
        if cap is None:
            return
        from engine.dataclass_io import ConfigError
        from engine.models import parameter_count

        params = parameter_count(spec)
        if params is None:
            raise ConfigError(
                "model.name_or_path",
                f"this demo loads models up to {cap:,} parameters, and the size of "
                f"{spec.name_or_path!r} cannot be read from its config; pick a listed model",
            )
        if params > cap:
            raise ConfigError(
                "model.name_or_path",
                f"{params:,} parameters is over this demo's cap of {cap:,}; pick a smaller "
                "model (the default model always fits)",
            )

    # ---- supervision of queued and lost runs ----------------------------------------------
    def start_supervisor(self, interval_s: float = SUPERVISE_SECONDS) -> None:
        """Start a daemon thread that marks lost runs interrupted and starts queued ones."""
        if self._supervisor is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval_s):
                try:
                    self.launcher.dispatch()
                except Exception:  # the app keeps serving; the next round retries
                    logger.warning("Run supervision failed", exc_info=True)

        self._supervisor = threading.Thread(target=loop, name="run-supervisor", daemon=True)
        self._supervisor.start()

    def close(self) -> None:
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=SUPERVISE_SECONDS + 1)
            self._supervisor = None
        if "db" in self.__dict__:
            self.db.close()
