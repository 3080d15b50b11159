"""What every tab of the dashboard shares: the data dir, the database, the launcher, the settings.

One :class:`AppContext` is made per app (by :func:`ui.factory.build_app`'s caller, never at import
time) and handed to each ``build_<tab>(ctx)``. Per-browser-session state lives in ``gr.State``
dataclasses inside the tabs; what is here is shared by every session.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
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
DEMO_MAX_WORKER_ENV = "STUDIO_DEMO_MAX_WORKER_MB"
DEMO_MAX_CALL_ENV = "STUDIO_DEMO_MAX_CALL_S"
#: Seconds one preview or Playground call may generate on a public app: they share one slot,
#: so this bounds every visitor's wait behind another's call, whatever the model's size.
PUBLIC_MAX_CALL_S = 60
#: Memory (MiB) a run's worker may hold on a public app: a Space's CPU box has 16 GB, and the
#: web process and a second run need room beside it.
PUBLIC_MAX_WORKER_MB = 6144
#: Size caps of a public demo: config field -> (environment variable, default when public).
#: Memory grows with prompts x generations x tokens; eval and sample logging add to each step.
DEMO_SIZE_CAPS: dict[str, tuple[str, int]] = {
    "training.steps": (DEMO_MAX_STEPS_ENV, 200),
    "training.prompts_per_step": ("STUDIO_DEMO_MAX_PROMPTS_PER_STEP", 16),
    "generation.num_generations": ("STUDIO_DEMO_MAX_NUM_GENERATIONS", 16),
    "generation.max_completion_length": ("STUDIO_DEMO_MAX_COMPLETION_LENGTH", 512),
    "training.eval_samples": ("STUDIO_DEMO_MAX_EVAL_SAMPLES", 200),
    "training.samples_per_log": ("STUDIO_DEMO_MAX_SAMPLES_PER_LOG", 64),
    "data.max_rows": ("STUDIO_DEMO_MAX_ROWS", 10_000),
    "data.max_file_rows": ("STUDIO_DEMO_MAX_FILE_ROWS", 100_000),
}
#: Size caps an unset (``None``) field takes instead of being refused.
FILLED_WHEN_UNSET = ("data.max_rows", "data.max_file_rows")
SUPERVISE_SECONDS = 5.0
PUBLIC_ENV = "STUDIO_PUBLIC"
SPACE_ENV = "SPACE_ID"


def on_space(env: Mapping[str, str] | None = None) -> bool:
    """True when the app runs on a Hugging Face Space."""
    env = os.environ if env is None else env
    return bool(env.get(SPACE_ENV, "").strip())


def is_public(env: Mapping[str, str] | None = None) -> bool:
    """True for a public app: on a Space, or with ``STUDIO_PUBLIC=1``."""
    env = os.environ if env is None else env
    return on_space(env) or env.get(PUBLIC_ENV, "").strip().lower() in ("1", "true", "yes")


class SettingsError(ValueError):
    """An environment variable of the app holds a value it cannot use; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def positive_int_setting(env: Mapping[str, str], name: str) -> int | None:
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
        max_model_params: the largest model (parameter count) the preview and training may load.
        max_preview_samples: the most completions one preview may generate (prompts x samples).
        max_call_s: the most seconds one preview or Playground call generates (then it
            returns what it has).
        max_worker_mb: the most memory (MiB, resident) one run's worker may hold; a run over
            it is stopped with a message (``engine.run.memory_watch``).
        sizes: config field -> its cap (``DEMO_SIZE_CAPS``), the steps cap included.
    """

    max_model_params: int | None = None
    max_preview_samples: int | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)
    max_worker_mb: int | None = None
    max_call_s: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DemoLimits:
        """Caps from ``STUDIO_DEMO_*``. A public app (:func:`is_public`, or with any demo cap
        set) gets every size cap of ``DEMO_SIZE_CAPS``: its variable, else its default."""
        env = os.environ if env is None else env
        public = is_public(env) or any(env.get(name, "").strip() for name in _demo_envs())
        sizes = {}
        for path, (name, default) in DEMO_SIZE_CAPS.items():
            value = positive_int_setting(env, name)
            if value is not None or public:
                sizes[path] = value if value is not None else default
        worker_mb = positive_int_setting(env, DEMO_MAX_WORKER_ENV)
        call_s = positive_int_setting(env, DEMO_MAX_CALL_ENV)
        return cls(
            max_model_params=positive_int_setting(env, DEMO_MAX_PARAMS_ENV),
            max_preview_samples=positive_int_setting(env, DEMO_MAX_PREVIEW_ENV),
            sizes=sizes,
            max_worker_mb=worker_mb or (PUBLIC_MAX_WORKER_MB if public else None),
            max_call_s=call_s or (PUBLIC_MAX_CALL_S if public else None),
        )

    @property
    def max_steps(self) -> int | None:
        """The most training steps one run may ask for (the ``training.steps`` size cap)."""
        return self.sizes.get("training.steps")

    @property
    def active(self) -> bool:
        return self.max_model_params is not None or bool(self.sizes)

    def within_caps(self, config: Any) -> Any:
        """``config`` (a ``RunConfig``, left as it is) checked against every size cap, as the
        demo runs it: an unset ``data.max_rows`` or ``data.max_file_rows`` takes the cap (at
        most the first rows are read).

        Raises:
            ConfigError: on the field, naming its cap.
        """
        from engine.config.fields import ConfigError

        for path, cap in self.sizes.items():
            section, name = path.split(".")
            value = getattr(getattr(config, section), name)
            if value is not None and value > cap:
                raise ConfigError(
                    path, f"this demo allows at most {cap:,} {_CAP_NOUNS[path]}, got {value:,}"
                )
        unset = {
            path.split(".")[1]: self.sizes[path]
            for path in FILLED_WHEN_UNSET
            if path in self.sizes and getattr(config.data, path.split(".")[1]) is None
        }
        return replace(config, data=replace(config.data, **unset)) if unset else config

    def call_deadline(self) -> float | None:
        """The ``time.monotonic()`` at which a preview or Playground call starting now stops
        generating (``None``: no bound)."""
        return None if self.max_call_s is None else time.monotonic() + self.max_call_s

    def describe(self) -> str:
        parts = []
        if self.max_steps is not None:
            parts.append(f"at most {self.max_steps} training steps per run")
        if self.max_model_params is not None:
            parts.append(f"models up to {self.max_model_params:,} parameters")
        if self.max_preview_samples is not None:
            parts.append(f"at most {self.max_preview_samples} completions per preview")
        shown = [p for p in DEMO_SIZE_CAPS if p in self.sizes and p != "training.steps"]
        if shown:
            parts.append(", ".join(f"{_CAP_NOUNS[p]} up to {self.sizes[p]:,}" for p in shown))
        return "Demo mode: " + ", ".join(parts) + "." if parts else ""


_CAP_NOUNS = {
    "training.steps": "steps",
    "training.prompts_per_step": "prompts per step",
    "generation.num_generations": "generations per prompt",
    "generation.max_completion_length": "tokens per completion",
    "training.eval_samples": "evaluation samples",
    "training.samples_per_log": "stored samples per log",
    "data.max_rows": "dataset rows",
    "data.max_file_rows": "rows in a data file",
}


def _demo_envs() -> list[str]:
    return [DEMO_MAX_PARAMS_ENV, DEMO_MAX_PREVIEW_ENV, DEMO_MAX_WORKER_ENV, DEMO_MAX_CALL_ENV] + [
        n for n, _ in DEMO_SIZE_CAPS.values()
    ]


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
                    AUTH_ENV, f"entry {i + 1} must read user:password (its value is not shown)"
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
        launcher: starts, stops, resumes and deletes runs (``engine.run.launcher.Launcher``).
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
        """What visitors' runs and previews may read (``input_policy.InputPolicy``)."""
        from engine.config.input_policy import InputPolicy

        return InputPolicy.for_web(self.data_dir)

    @cached_property
    def launcher(self) -> Any:
        from engine.run.launcher import Launcher

        cap = self.demo.max_worker_mb
        return Launcher(
            self.data_dir,
            policy=self.input_policy,
            max_worker_bytes=None if cap is None else cap * 2**20,
        )

    def runs_root(self) -> Path:
        from storage.paths import runs_dir

        return runs_dir(self.data_dir)

    # ---- models for the preview ---------------------------------------------------------
    def model(self, spec: Any) -> tuple[Any, Any]:
        """The (model, tokenizer) of a ``ModelSpec``, loaded once per spec and kept.

        Only the latest model stays loaded: a preview of a large model must not keep the
        previous one in memory.
        """
        from engine.models.loading import load_model_and_tokenizer

        key = repr(spec)
        with self._model_lock:
            if key not in self._models:
                self.check_model_size(spec)
                self._models.clear()
                self._models[key] = load_model_and_tokenizer(spec, token=self._hub_token())
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

    def policy_for(self, owner: str, admin: bool = False) -> Any:
        """The input policy of one user's request: their own uploads (an admin's: all)."""
        return self.input_policy.for_owner(owner, admin=admin)

    def start_run(
        self, config: Any, owner: str = "local", caps: Any = None, *, admin: bool = False
    ) -> str:
        """Start (or queue) a ``RunConfig`` of ``owner`` within the demo's caps; returns the
        run id. The run may read only ``owner``'s uploads, unless ``admin``.

        Raises:
            ConfigError: a field the run cannot start with (model size, model, data).
            TooManyActiveRunsError: over ``caps`` (``storage.run_caps.ActiveRunCaps``), the caps on
                queued and running runs.
        """
        config = self.demo.within_caps(config)
        self.input_policy.check_model(config.model)  # before its size is read from a path
        self.check_model_size(config.model)
        self.check_reward_model_sizes(config.reward)
        policy = self.policy_for(owner, admin)
        return self.launcher.start(config, owner=owner, caps=caps, policy=policy)

    def check_reward_model(self, name: str) -> None:
        """Raise ``ConfigError`` (a ``ValueError``) for a reward or judge model this app's
        visitors may not load: the input policy's model rule, then the demo's size cap."""
        from engine.models.specs import ModelSpec

        spec = ModelSpec(name_or_path=name)
        self.input_policy.check_model(spec)
        self.check_model_size(spec)

    def check_reward_model_sizes(self, reward: Any) -> None:
        """The demo's model-size cap for the models a reward loads (a reward model, a local
        judge), raised on that component's ``model`` field."""
        from engine.config.fields import ConfigError
        from engine.models.specs import ModelSpec
        from rewards.components.reward_model import loaded_models

        self.input_policy.check_reward(reward)  # before a size is read from a path
        for i, name in loaded_models(reward):
            try:
                self.check_model_size(ModelSpec(name_or_path=name))
            except ConfigError as err:
                raise ConfigError(f"reward.components[{i}].params.model", err.reason) from None

    def _hub_token(self) -> bool | None:
        """Hub downloads for visitors go without the server's token unless the operator allows
        it (``STUDIO_VISITOR_HUB_TOKEN``): ``False`` is huggingface_hub's "no token"."""
        return None if self.input_policy.hub_token else False

    def check_model_size(self, spec: Any) -> None:
        """Refuse a model over the demo's size cap before anything is downloaded or loaded.

        Raises:
            ConfigError: on ``model.name_or_path``, saying the size and the cap.
        """
        cap = self.demo.max_model_params
        if cap is None:
            return
        from engine.config.fields import ConfigError
        from engine.models.loading import parameter_count

        params = parameter_count(spec, token=self._hub_token())
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
            while True:  # the first round at once: runs lost while the app was down show now
                try:
                    self.launcher.dispatch()
                except Exception:  # the app keeps serving; the next round retries
                    logger.warning("Run supervision failed", exc_info=True)
                if self._stop.wait(interval_s):
                    return

        self._supervisor = threading.Thread(target=loop, name="run-supervisor", daemon=True)
        self._supervisor.start()

    def close(self) -> None:
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=SUPERVISE_SECONDS + 1)
            self._supervisor = None
        if "db" in self.__dict__:
            self.db.close()
