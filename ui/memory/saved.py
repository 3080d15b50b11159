"""Stored form values read back (no Gradio here): each goes through the check its input has,
and a value that fails it is dropped and named, never raised.

A browser's storage is the user's to edit: what comes back may be anything JSON holds.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.data.datasets import BUILTIN_TASKS, SOURCES
from rewards.spec import RewardSpec
from ui.design import spec_io
from ui.plots.charts import ChartOptions
from ui.train.form import FormField

MAX_TEXT_CHARS = 1000  # a run name, a model id, a text field
# The Train form's model inputs
MODEL_KEYS = ("key", "custom", "lora", "lora_r", "lora_alpha", "lora_layers")
# The Train form's data inputs that are kept: all but the uploaded file, which lives on the
# server (a restored "file" source shows an empty file box, and Start asks for the file).
DATA_KEYS = ("source", "split", "hub_id", "hub_config", "prompt_col", "answer_col", "system_col")
DATA_KEYS += ("task",)


def saved_spec(text: Any) -> RewardSpec:
    """The stored design, through the same parser and limits as an imported spec.

    Raises:
        RewardSpecError: not a spec (the reason names the field).
    """
    return spec_io.parse_spec(text if isinstance(text, str) else "")


def chart_settings(value: Any) -> ChartOptions | None:
    """Stored chart settings (``{"smoothing", "x", "log_y"}``); a bad one falls back to its
    default, as the controls' own values do; ``None`` when nothing usable is stored."""
    if not isinstance(value, Mapping):
        return None
    return ChartOptions.from_inputs(value.get("smoothing"), value.get("x"), value.get("log_y"))


def chart_record(options: ChartOptions) -> dict[str, Any]:
    return {"smoothing": options.smoothing, "x": options.x, "log_y": options.log_y}


def _number(value: Any, kind: str) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and (kind == "float" or float(value).is_integer())


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_TEXT_CHARS


def field_value_ok(f: FormField, value: Any) -> bool:
    """Whether ``value`` is one the input of ``f`` can hold (its range is the config's to
    check, and the form shows that error on the field as for a typed value)."""
    if f.kind == "bool":
        return isinstance(value, bool)
    if f.kind in ("int", "float"):
        return _text(value) if f.optional else _number(value, f.kind)
    if f.kind == "choice":
        return value in f.choices
    if f.kind == "multi":
        return isinstance(value, list) and all(v in f.choices for v in value)
    return _text(value)


@dataclass
class TrainRestore:
    """The Train form values that may be put back, and the names of those dropped."""

    name: str | None = None
    algorithm: str | None = None
    model: dict[str, Any] = field(default_factory=dict)  # MODEL_KEYS -> value
    hyper: dict[str, Any] = field(default_factory=dict)  # dotted field path -> value
    data: dict[str, Any] = field(default_factory=dict)  # DATA_KEYS -> value
    dropped: list[str] = field(default_factory=list)


def train_values(
    value: Any,
    fields: Mapping[str, FormField],
    algorithms: Collection[str],
    model_keys: Collection[str],
) -> TrainRestore:
    """The stored Train form (``{"name", "algorithm", "model": {...}, "data": {...},
    "hyper": {path: v}}``) checked field by field against the form's own fields and choices."""
    out = TrainRestore()
    if not isinstance(value, Mapping):
        return out
    name, algorithm = value.get("name"), value.get("algorithm")
    if _text(name):
        out.name = name
    elif name is not None:
        out.dropped.append("name")
    if algorithm in algorithms:
        out.algorithm = algorithm
    elif algorithm is not None:
        out.dropped.append("algorithm")
    model = value.get("model")
    checks = {
        "key": lambda v: v in model_keys,
        "custom": _text,
        "lora": lambda v: isinstance(v, bool),
        "lora_r": lambda v: _number(v, "int"),
        "lora_alpha": lambda v: _number(v, "int"),
        "lora_layers": lambda v: _number(v, "int"),
    }
    for key, v in model.items() if isinstance(model, Mapping) else ():
        if key in checks and checks[key](v):
            out.model[key] = v
        else:
            out.dropped.append(f"model.{key}")
    data = value.get("data")
    data_checks = {key: _text for key in DATA_KEYS}
    data_checks.update(source=lambda v: v in SOURCES, task=lambda v: v in BUILTIN_TASKS)
    for key, v in data.items() if isinstance(data, Mapping) else ():
        if key in data_checks and data_checks[key](v):
            out.data[key] = v
        else:
            out.dropped.append(f"data.{str(key)[:40]}")
    hyper = value.get("hyper")
    for path, v in hyper.items() if isinstance(hyper, Mapping) else ():
        if path in fields and field_value_ok(fields[path], v):
            out.hyper[path] = v
        else:
            out.dropped.append(str(path)[:80])
    return out
