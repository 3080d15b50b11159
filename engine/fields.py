"""Strict conversion between nested config dataclasses and plain dicts (for YAML/JSON), and the
one place config fields declare their help text, allowed range and choices.

Unknown keys and wrongly typed values are rejected with the dotted path of the field, so a typo
in a config file reads as ``training.stepz: unknown field; allowed: steps, ...``. A field
declared with :func:`knob` carries its help text, bounds and choices in its metadata;
:func:`check_fields` (called from ``__post_init__``) enforces them and :func:`field_help` shows
them in the Train form and the exported config, so a range is written once.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from typing import Any, TypeVar

from rewards.input_guards.structured_text import TextFormatError, load_structured
from rewards.params import (
    MAX_ABS_INT,
    Bounds,
    describe_value,
    refuse_unknown_keys,
    text_problem,
)

T = TypeVar("T")
_NO_DEFAULT: Any = dataclasses.MISSING

#: Longest text any single config value may hold (paths, names, prompts are far shorter).
MAX_TEXT_CHARS = 10_000


class ConfigError(ValueError):
    """A config value is invalid; ``field`` is its dotted path (``training.steps``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


#: Largest config text (YAML or JSON) accepted; a full documented config is about 10 kB.
MAX_CONFIG_CHARS = 1_000_000

#: The range of a positive amount with no natural limit (a time, a clip bound, a file size).
POSITIVE: dict[str, Any] = {"lo": 0, "hi": 1e6, "lo_open": True}
#: The range of a random seed (what every seeded library accepts: a 31-bit integer).
SEED: dict[str, Any] = {"lo": 0, "hi": 2**31 - 1}


def knob(
    default: Any = _NO_DEFAULT,
    *,
    help: str,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    lo_field: str | None = None,
    hi_open: bool = False,
    choices: tuple[str, ...] = (),
    default_factory: Any = _NO_DEFAULT,
) -> Any:
    """A config dataclass field with its help text, range and choices, declared once.

    ``help`` says what the knob does; :func:`field_help` appends the range, so the text never
    states it. ``lo_field`` names a sibling field whose value is the lower bound; ``lo_open``
    and ``hi_open`` refuse the bound itself (``(0, 1e6]``, ``[0, 1)``).
    """
    metadata: dict[str, Any] = {"help": help}
    if choices:
        metadata["choices"] = choices
    if lo is not None or hi is not None or lo_field is not None:
        metadata["bounds"] = Bounds(lo, hi, lo_open, lo_field, hi_open)
    if default_factory is not _NO_DEFAULT:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def field_help(f: dataclasses.Field) -> str:
    """The help text of field ``f`` with its allowed range, for form tooltips and YAML comments."""
    text = f.metadata.get("help", "")
    bounds = f.metadata.get("bounds")
    if bounds is not None:
        text = f"{text.rstrip('.')}; allowed: {bounds.describe()}."
    return text


def check_fields(settings: Any, section: str) -> None:
    """Check every field of ``settings`` against its declared choices and bounds.

    Raises:
        ConfigError: naming the dotted field (``training.steps``), what was wrong and what is
            allowed. ``None`` passes (an optional knob left empty).
    """
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        path = _join(section, f.name)
        choices = f.metadata.get("choices")
        if choices:
            items = enumerate(value) if isinstance(value, list) else [(None, value)]
            for i, item in items:
                if item not in choices:
                    where = path if i is None else f"{path}[{i}]"
                    raise ConfigError(
                        where, f"must be one of {', '.join(choices)}, got {describe_value(item)}"
                    )
        bounds = f.metadata.get("bounds")
        if bounds is not None and value is not None:
            lo = getattr(settings, bounds.lo_field) if bounds.lo_field else None
            problem = bounds.problem(value, lo)
            if problem:
                raise ConfigError(path, problem)


def parse_yaml(text: str) -> Any:
    """A config's YAML (or JSON) text as plain data, through the one hardened parser
    (:func:`rewards.input_guards.structured_text.load_structured`); every failure is a
    ``ConfigError``."""
    try:
        return load_structured(text, MAX_CONFIG_CHARS)
    except TextFormatError as exc:
        raise ConfigError("", str(exc)) from None


def to_dict(obj: Any) -> dict[str, Any]:
    """The fields of dataclass ``obj`` as plain dicts/lists/scalars, recursively."""
    return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def to_plain(value: Any) -> Any:
    """A config value (scalar, list, dataclass, spec) as plain YAML/JSON data."""
    if hasattr(value, "to_dict"):  # a nested spec that owns its serialisation (RewardSpec)
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Build dataclass ``cls`` from ``data``, checking keys and scalar types field by field."""
    if not isinstance(data, dict):
        raise ConfigError(path, f"must be a mapping, got {type(data).__name__}")
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    refuse_unknown_keys(data, list(fields), path, ConfigError)
    kwargs = {name: _convert(hints[name], value, _join(path, name)) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        if path and not exc.field.startswith(path):
            raise ConfigError(_join(path, exc.field), exc.reason) from exc
        raise
    except ValueError as exc:
        sub = getattr(exc, "field", "")
        reason = getattr(exc, "reason", str(exc))
        raise ConfigError(_join(path, sub) if sub else path, reason) from exc


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # slow (it evaluates annotations): once per class


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _convert(option, value, path)
            except ConfigError as exc:
                errors.append(exc)
        raise errors[-1]
    if origin is typing.Literal:
        if not any(value == a and type(value) is type(a) for a in args):
            allowed = ", ".join(map(str, args))
            raise ConfigError(path, f"must be one of {allowed}, got {describe_value(value)}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(path, f"must be a list, got {type(value).__name__}")
        item = args[0] if args else Any
        converted = [_convert(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(converted) if origin is tuple else converted
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
        return dict(value)
    if isinstance(tp, type) and isinstance(value, tp) and hasattr(tp, "from_dict"):
        return value  # a spec object, validated when it was made: passed on, not re-parsed
    if hasattr(tp, "from_dict"):  # a nested spec that owns its parsing and validation
        if not isinstance(value, dict):
            raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
        try:
            return tp.from_dict(value)
        except ValueError as exc:
            sub = getattr(exc, "field", "")
            reason = str(exc).removeprefix(f"{sub}: ") if sub else str(exc)
            raise ConfigError(_join(path, sub) if sub else path, reason) from exc
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, path)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"must be true or false, got {describe_value(value)}")
        return value
    if tp is int:
        return _to_int(value, path)
    if tp is float:
        return _to_float(value, path)
    if tp is str:
        return _to_text(value, path)
    return value


def _to_int(value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {describe_value(value)}")
    if abs(value) > MAX_ABS_INT:
        raise ConfigError(
            path, f"must be an integer of at most 18 digits, got {describe_value(value)}"
        )
    return value


def _to_float(value: Any, path: str) -> float:
    number = value
    if isinstance(value, str):  # YAML 1.1 reads "5e-5" (no dot) as text
        try:
            number = float(value) if len(value) <= 100 else None
        except ValueError:
            number = None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        number = None
    elif isinstance(value, int):
        number = float(value) if abs(value) <= MAX_ABS_INT else None
    if number is None:
        raise ConfigError(path, f"must be a number, got {describe_value(value)}")
    if not math.isfinite(number):
        raise ConfigError(path, f"must be a finite number, got {describe_value(value)}")
    return float(number)


def _to_text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, f"must be text, got {describe_value(value)}")
    if len(value) > MAX_TEXT_CHARS:
        raise ConfigError(
            path, f"must be at most {MAX_TEXT_CHARS:,} characters, got {len(value):,}"
        )
    problem = text_problem(value)
    if problem:
        raise ConfigError(path, problem)
    return value
