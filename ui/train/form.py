"""The Train form as data: fields generated from ``RunConfig``'s dataclasses (no Gradio here).

Every hyperparameter the form shows is a field of a ``RunConfig`` section (``generation``,
``training``, ``tools``, ``grpo``, ``rloo``, and ``ppo`` once the config has it), with its type,
default and ``help`` text read from the dataclass, so the form, the CLI and the worker share one
definition.
Values travel **by name**: a dict keyed by dotted field path (``"training.steps"``), never by
position. :func:`build_config` turns such a dict into a validated ``RunConfig`` and reports a bad
value with the dotted field name, which the tab shows next to that input.
"""

from __future__ import annotations

import dataclasses
import shlex
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.config import run_config, suggestions
from engine.config.run_config import RunConfig
from engine.fields import field_help
from rewards.spec import RewardSpec

FormValues = dict[str, Any]  # dotted field path -> the input's value
# Sections of RunConfig that every algorithm's form shows, in form order (tools: refused by name
# with rloo and ppo, so a tool run loaded into the form keeps its tools and says so).
HYPER_SECTIONS = ("generation", "training", "tools")
# The most-used knobs, shown up front; every other field sits under "Advanced".
KEY_FIELDS = frozenset(
    {
        "generation.num_generations",
        "generation.max_completion_length",
        "generation.temperature",
        "training.steps",
        "training.prompts_per_step",
        "training.learning_rate",
        "training.save_steps",
        "training.eval_steps",
        "training.eval_samples",
        "training.num_gpus",
        "tools.builtin",
        "tools.max_tool_calls",
        "grpo.loss_type",
        "grpo.beta",
        "grpo.epsilon",
        "grpo.epsilon_high",
        "rloo.beta",
        "rloo.epsilon",
        "rloo.normalize_advantages",
        "ppo.kl_coef",
        "ppo.gamma",
        "ppo.lam",
        "ppo.vf_coef",
        "ppo.value_learning_rate",
        "ppo.value_warmup_steps",
    }
)


@dataclass(frozen=True)
class FormField:
    """One input of the Train form.

    Attributes:
        path: dotted config path (``training.steps``), also the key of its error message.
        kind: ``int`` | ``float`` | ``bool`` | ``str`` | ``choice`` | ``multi``.
        default: the config's default value.
        help: the dataclass field's help text with its declared range (``field_help``).
        optional: the field accepts "empty" (``None``).
        choices: allowed values for ``choice`` and ``multi`` fields.
    """

    path: str
    kind: str
    default: Any
    help: str
    optional: bool = False
    choices: tuple[str, ...] = ()

    @property
    def section(self) -> str:
        return self.path.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.path.split(".", 1)[1]

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")

    @property
    def key(self) -> bool:
        return self.path in KEY_FIELDS


def algorithms() -> list[str]:
    """Algorithms the config offers: each needs its own section in ``RunConfig`` (PPO
    appears once the config grows a ``ppo`` section)."""
    sections = {f.name for f in dataclasses.fields(RunConfig)}
    return [a for a in run_config.ALGORITHMS if a in sections]


def _kind(tp: Any, choices: Sequence[str]) -> tuple[str, bool]:
    args = typing.get_args(tp)
    optional = type(None) in args
    if optional:
        tp = next(a for a in args if a is not type(None))
    if typing.get_origin(tp) in (list, tuple):
        return "multi", optional
    if choices:
        return "choice", optional
    return {bool: "bool", int: "int", float: "float"}.get(tp, "str"), optional


def section_fields(section: str) -> list[FormField]:
    """The form fields of one ``RunConfig`` section, in dataclass order."""
    cls = typing.get_type_hints(RunConfig)[section]
    hints = typing.get_type_hints(cls)
    instance = cls()
    out = []
    for f in dataclasses.fields(cls):
        path = f"{section}.{f.name}"
        choices = tuple(f.metadata.get("choices", ()))
        kind, optional = _kind(hints[f.name], choices)
        out.append(
            FormField(
                path=path,
                kind=kind,
                default=getattr(instance, f.name),
                help=field_help(f),
                optional=optional,
                choices=choices,
            )
        )
    return out


def form_fields() -> list[FormField]:
    """Every hyperparameter field: shared sections first, then one section per algorithm."""
    return [f for s in (*HYPER_SECTIONS, *algorithms()) for f in section_fields(s)]


def _value(field: FormField, raw: Any) -> Any:
    """A form value as the config wants it (empty inputs become ``None``; numbers typed as
    text are parsed, and text that is not a number is passed on for the config to reject)."""
    if raw is None or (isinstance(raw, str) and not raw.strip() and field.kind != "str"):
        return None if field.optional else raw
    if field.kind in ("int", "float") and isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return raw.strip()
    if field.kind == "int" and isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if field.kind == "multi":
        return list(raw)
    return raw


@dataclass(frozen=True)
class TrainInputs:
    """Everything the Train tab collects besides the hyperparameters."""

    name: str
    algorithm: str
    model: Mapping[str, Any]
    data: Mapping[str, Any]
    reward: RewardSpec  # validated by the Design form


def config_dict(
    inputs: TrainInputs, fields: Sequence[FormField], values: Mapping[str, Any]
) -> dict[str, Any]:
    """The plain config dict of the form (only the chosen algorithm's section); ``values`` holds
    one value per field, keyed by its path."""
    paths = {f.path for f in fields}
    missing = sorted(paths - set(values))
    unknown = sorted(set(values) - paths)
    if missing or unknown:
        raise ValueError(f"form values: missing {missing[:5]}, unknown {unknown[:5]}")
    data: dict[str, Any] = {
        "name": inputs.name.strip(),
        "algorithm": inputs.algorithm,
        "model": dict(inputs.model),
        "data": dict(inputs.data),
        "reward": inputs.reward,
    }
    for field in fields:
        if field.section in HYPER_SECTIONS or field.section == inputs.algorithm:
            data.setdefault(field.section, {})[field.name] = _value(field, values[field.path])
    return data


def build_config(
    inputs: TrainInputs, fields: Sequence[FormField], values: Mapping[str, Any]
) -> RunConfig:
    """A validated ``RunConfig`` from the form; raises ``ConfigError`` naming the field."""
    return RunConfig.from_dict(config_dict(inputs, fields, values))


def values_from_config(config: RunConfig, fields: Sequence[FormField]) -> FormValues:
    """The form values, by field path, that reproduce ``config`` (to load a run's config)."""
    out: FormValues = {}
    for field in fields:
        section = getattr(config, field.section, None)
        value = getattr(section, field.name, field.default) if section is not None else None
        out[field.path] = list(value) if isinstance(value, (list, tuple)) else value
    return out


def input_value(field: FormField, value: Any) -> Any:
    """A config value as its input shows it (optional numbers are text; empty means none)."""
    if field.optional and field.kind in ("int", "float"):
        return "" if value is None else str(value)
    return value


def suggested_values(
    fields: Sequence[FormField], pretrained: bool, on_gpu: bool, algorithm: str = "grpo"
) -> dict[str, Any]:
    """Values to put in the form when the model or the algorithm changes: every field a
    suggestion for ``algorithm`` sets, at the suggested value for a pretrained model (the
    device's settings and the algorithm's, :mod:`engine.config.suggestions`) and at the
    config's default for the default model."""
    by_path = {f.path: f for f in fields}
    chosen = suggestions.suggested_values(algorithm, pretrained, on_gpu)
    return {
        path: chosen.get(path, by_path[path].default)
        for path in suggestions.suggested_values(algorithm, True, on_gpu)
        if path in by_path
    }


def suggested_paths(fields: Sequence[FormField], on_gpu: bool) -> list[str]:
    """Every field a suggestion may set, for any algorithm (the inputs a change updates)."""
    paths = {p for a in algorithms() for p in suggested_values(fields, True, on_gpu, a)}
    return sorted(paths)


CONFIG_FILE_NAME = "run-config.yaml"


def cli_command(file_name: str = CONFIG_FILE_NAME, data_dir: str | None = None) -> str:
    """The shell command that trains the same config headless."""
    cmd = ["python", "-m", "engine", "train", file_name]
    if data_dir:
        cmd += ["--data-dir", data_dir]
    return shlex.join(cmd)
