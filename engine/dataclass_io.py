"""Strict conversion between nested config dataclasses and plain dicts (for YAML/JSON).

Unknown keys and wrongly typed values are rejected with the dotted path of the field, so a typo
in a config file reads as ``training.stepz: unknown field; allowed: steps, ...``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A config value is invalid; ``field`` is its dotted path (``training.steps``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


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
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = _join(path, unknown[0])
        raise ConfigError(where, f"unknown field; allowed: {', '.join(fields)}")
    kwargs = {name: _convert(hints[name], value, _join(path, name)) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        if path and not exc.field.startswith(path):
            raise ConfigError(_join(path, exc.field), exc.reason) from exc
        raise
    except ValueError as exc:
        sub = getattr(exc, "field", "")
        raise ConfigError(_join(path, sub) if sub else path, str(exc)) from exc


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
        if value not in args:
            raise ConfigError(path, f"must be one of {', '.join(map(str, args))}, got {value!r}")
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
    if hasattr(tp, "from_dict"):  # a nested spec that owns its parsing and validation
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
            raise ConfigError(path, f"must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(path, f"must be an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):  # YAML 1.1 reads "5e-5" (no dot) as text
            try:
                return float(value)
            except ValueError:
                raise ConfigError(path, f"must be a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, f"must be a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"must be text, got {value!r}")
        return value
    return value
