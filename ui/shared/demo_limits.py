"""The caps of a public demo (a Space, ``STUDIO_PUBLIC=1``, or any ``STUDIO_DEMO_*`` set): model
size, preview size, every size knob of a run (:data:`DEMO_SIZE_CAPS`), a run's memory and a
preview's time. Unset caps on a public app take the defaults written here, which the README
lists."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ui.shared.settings import is_public, positive_int_setting

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
#: A public app's largest model: the listed models (the default and SmolLM2-135M) fit.
PUBLIC_MAX_MODEL_PARAMS = 200_000_000
#: A public app's most completions per preview.
PUBLIC_MAX_PREVIEW_SAMPLES = 64
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
    "training.time_budget_minutes": ("STUDIO_DEMO_MAX_MINUTES", 60),
    "grpo.num_iterations": ("STUDIO_DEMO_MAX_NUM_ITERATIONS", 4),
    "rloo.num_iterations": ("STUDIO_DEMO_MAX_NUM_ITERATIONS", 4),
    "ppo.ppo_epochs": ("STUDIO_DEMO_MAX_PPO_EPOCHS", 4),
    "model.lora.r": ("STUDIO_DEMO_MAX_LORA_RANK", 64),
}
#: Size caps an unset (``None``) field takes instead of being refused.
FILLED_WHEN_UNSET = ("data.max_rows", "data.max_file_rows", "training.time_budget_minutes")
#: Caps from below: config field -> (environment variable, default when public); 0 stays
#: allowed (evaluation before and after training only).
DEMO_MIN_CAPS: dict[str, tuple[str, int]] = {
    "training.eval_steps": ("STUDIO_DEMO_MIN_EVAL_STEPS", 10),
}


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
        minimums: config field -> its least nonzero value (``DEMO_MIN_CAPS``).
        one_machine: runs train on this machine only (``training.num_machines`` 1): a run
            over several machines opens a port for the others to join, which no visitor of a
            public app may do; no setting lifts it (the command line and a private app may).
    """

    max_model_params: int | None = None
    max_preview_samples: int | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)
    max_worker_mb: int | None = None
    max_call_s: int | None = None
    minimums: Mapping[str, int] = field(default_factory=dict)
    one_machine: bool = False

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
        minimums = {}
        for path, (name, default) in DEMO_MIN_CAPS.items():
            value = positive_int_setting(env, name)
            if value is not None or public:
                minimums[path] = value if value is not None else default

        def setting(name: str, public_default: int) -> int | None:
            return positive_int_setting(env, name) or (public_default if public else None)

        return cls(
            max_model_params=setting(DEMO_MAX_PARAMS_ENV, PUBLIC_MAX_MODEL_PARAMS),
            max_preview_samples=setting(DEMO_MAX_PREVIEW_ENV, PUBLIC_MAX_PREVIEW_SAMPLES),
            sizes=sizes,
            minimums=minimums,
            max_worker_mb=setting(DEMO_MAX_WORKER_ENV, PUBLIC_MAX_WORKER_MB),
            max_call_s=setting(DEMO_MAX_CALL_ENV, PUBLIC_MAX_CALL_S),
            one_machine=public,
        )

    @property
    def max_steps(self) -> int | None:
        """The most training steps one run may ask for (the ``training.steps`` size cap)."""
        return self.sizes.get("training.steps")

    @property
    def active(self) -> bool:
        return self.max_model_params is not None or bool(self.sizes)

    def within_caps(self, config: Any) -> Any:
        """``config`` (a ``RunConfig``, left as it is) checked against every size cap and
        minimum, as the demo runs it: an unset field of ``FILLED_WHEN_UNSET`` takes its cap on
        the copy returned (a missing section, such as no LoRA, has none to check).

        Raises:
            ConfigError: on the field, naming its cap.
        """
        from engine.fields import ConfigError

        machines = _value(config, "training.num_machines")
        if self.one_machine and machines is not None and machines > 1:
            raise ConfigError(
                "training.num_machines",
                f"this demo trains on its own machine only: set it to 1, got {machines} (a run "
                "over several machines opens a port for them; start one from the command line)",
            )
        filled = {}
        for path, cap in self.sizes.items():
            value = _value(config, path)
            if value is None and path in FILLED_WHEN_UNSET and _holder(config, path)[0]:
                filled[path] = cap  # e.g. the demo reads at most the first `cap` rows
            elif value is not None and value > cap:
                raise ConfigError(
                    path, f"this demo allows at most {cap:,} {_CAP_NOUNS[path]}, got {value:,}"
                )
        for path, least in self.minimums.items():
            value = _value(config, path)
            if value is not None and 0 < value < least:
                raise ConfigError(
                    path,
                    f"this demo evaluates at most every {least:,} steps (or 0: before and "
                    f"after training only), got {value:,}",
                )
        for path, cap in filled.items():
            config = _replaced(config, path.split("."), cap)
        return config

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
        nouns = dict.fromkeys(_CAP_NOUNS[p] for p in shown)  # GRPO's and RLOO's passes once
        caps = {_CAP_NOUNS[p]: self.sizes[p] for p in shown}
        if nouns:
            parts.append(", ".join(f"{noun} up to {caps[noun]:,}" for noun in nouns))
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
    "training.time_budget_minutes": "minutes per run",
    "grpo.num_iterations": "passes over each batch",
    "rloo.num_iterations": "passes over each batch",
    "ppo.ppo_epochs": "passes over each rollout",
    "model.lora.r": "LoRA rank",
}


def _value(config: Any, path: str) -> Any:
    holder, name = _holder(config, path)
    return None if holder is None else getattr(holder, name)


def _replaced(obj: Any, names: list[str], value: Any) -> Any:
    """A copy of the dataclass ``obj`` with the field at ``names`` set to ``value``."""
    if len(names) == 1:
        return replace(obj, **{names[0]: value})
    return replace(obj, **{names[0]: _replaced(getattr(obj, names[0]), names[1:], value)})


def _holder(config: Any, path: str) -> tuple[Any, str]:
    """``(object holding the field, field name)`` of a dotted path; ``(None, name)`` when a
    section on the way is unset (e.g. ``model.lora`` for full fine-tuning)."""
    *sections, name = path.split(".")
    holder = config
    for section in sections:
        holder = getattr(holder, section, None)
        if holder is None:
            break
    return holder, name


def _demo_envs() -> list[str]:
    named = [DEMO_MAX_PARAMS_ENV, DEMO_MAX_PREVIEW_ENV, DEMO_MAX_WORKER_ENV, DEMO_MAX_CALL_ENV]
    return named + [n for n, _ in (*DEMO_SIZE_CAPS.values(), *DEMO_MIN_CAPS.values())]
