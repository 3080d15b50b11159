"""What every tab of the dashboard shares: the data dir, the database, the launcher, the settings.

One :class:`AppContext` is made per app (by :func:`ui.factory.build_app`'s caller, never at import
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

from storage.paths import db_path
from storage.sqlite.db import Database
from ui.shared.demo_limits import DEMO_SIZE_CAPS as DEMO_SIZE_CAPS
from ui.shared.demo_limits import DemoLimits
from ui.shared.settings import PUBLIC_ENV as PUBLIC_ENV
from ui.shared.settings import SettingsError as SettingsError
from ui.shared.settings import is_public as is_public
from ui.shared.settings import on_space as on_space
from ui.shared.settings import positive_int_setting as positive_int_setting

logger = logging.getLogger(__name__)

AUTH_ENV = "STUDIO_AUTH"
USERNAME_ENV = "STUDIO_USERNAME"
PASSWORD_ENV = "STUDIO_PASSWORD"
SUPERVISE_SECONDS = 5.0


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


def _latest_model() -> Any:
    """The preview's model cache (engine imported lazily, as elsewhere in this module)."""
    from engine.interactive.loaded_models import LatestModel

    return LatestModel()


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
    # The preview's one loaded model (engine.interactive.loaded_models.LatestModel).
    _latest_model: Any = field(default_factory=_latest_model, init=False, repr=False)

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
        previous one in memory. A model over the size cap is refused before the kept one goes.
        """
        from engine.models.loading import load_model_and_tokenizer

        key = repr(spec)
        if self._latest_model.kept(key) is None:
            self.check_model_size(spec)
        return self._latest_model.get(
            key, lambda: load_model_and_tokenizer(spec, token=self._hub_token())
        )

    def cached_tokenizer(self, key: str) -> Any:
        """``tokenize(text) -> ids`` of the loaded model with this key (``repr`` of its spec),
        or ``None`` when that model is no longer loaded."""
        loaded = self._latest_model.kept(key)
        if loaded is None:
            return None
        tokenizer = loaded[1]
        return lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]

    def policy_for(self, owner: str, admin: bool = False) -> Any:
        """The input policy of one user's request: their own uploads (an admin's: all)."""
        return self.input_policy.for_owner(owner, admin=admin)

    @cached_property
    def address_slots(self) -> Any:
        """Anonymous visitors' active runs per address (``ui.access.run_slots``)."""
        from ui.access.run_slots import AddressRunSlots, address_cap

        return AddressRunSlots(address_cap(), self._is_active)

    def start_run(
        self,
        config: Any,
        owner: str = "local",
        caps: Any = None,
        *,
        admin: bool = False,
        address: str = "",
    ) -> str:
        """Start (or queue) a ``RunConfig`` of ``owner`` within the demo's caps; returns the
        run id. The run may read only ``owner``'s uploads, unless ``admin``; with ``address``
        (an anonymous visitor's), it counts against that address's runs too.

        Raises:
            ConfigError: a field the run cannot start with (model size, model, data).
            TooManyActiveRunsError: over ``caps`` (``storage.run_caps.ActiveRunCaps``), the caps on
                queued and running runs, or over the address's.
        """
        return self.address_slots.start(
            address, lambda: self._start_run(config, owner, caps, admin)
        )

    def _is_active(self, run_id: str) -> bool:
        from storage.runs import get_run
        from storage.sqlite.schema import ACTIVE_STATUSES

        run = get_run(self.db, run_id)
        return run is not None and run.status in ACTIVE_STATUSES

    def _start_run(self, config: Any, owner: str, caps: Any, admin: bool) -> str:
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
        from engine.fields import ConfigError
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
        from engine.fields import ConfigError
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
