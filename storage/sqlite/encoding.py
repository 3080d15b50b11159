"""Checking and converting values for the studio database: numbers, text, strict JSON.

Every error names the field it is about, so a caller sees which input was wrong and why.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import os
from collections.abc import Mapping
from typing import Any


def finite_or_none(value: Any, field: str) -> float | None:
    """``float(value)``, or ``None`` for None/NaN/±inf; numpy and torch scalars are accepted."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{field}: expected a number, got the {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{field}: expected a number, got {type(value).__name__} {value!r}"
        ) from exc
    return number if math.isfinite(number) else None


def as_int(value: Any, field: str, *, minimum: int | None = None) -> int:
    """An exact integer (numpy ints too; bools and floats are rejected)."""
    if isinstance(value, bool):
        raise TypeError(f"{field}: expected an integer, got the bool {value!r}")
    try:
        number = operator.index(value)
    except TypeError as exc:
        raise TypeError(
            f"{field}: expected an integer, got {type(value).__name__} {value!r}"
        ) from exc
    if minimum is not None and number < minimum:
        raise ValueError(f"{field}: must be >= {minimum}, got {number}")
    return number


def optional_int(value: Any, field: str, *, minimum: int | None = None) -> int | None:
    """:func:`as_int`, letting ``None`` through."""
    return None if value is None else as_int(value, field, minimum=minimum)


def series_name(name: Any, field: str, max_length: int) -> str:
    """``name`` of a stored series (a metric, a distribution): a non-empty string of at most
    ``max_length`` characters; ``ValueError`` naming ``field`` otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{field}: expected a non-empty string, got {name!r}")
    if len(name) > max_length:
        raise ValueError(
            f"{field}: {name[:40]!r}... is {len(name)} characters; at most {max_length} allowed"
        )
    return name


def plain_json(obj: Any, field: str) -> Any:
    """``obj`` as plain JSON values (dict, list, str, int, float, bool, None) that
    :func:`json_text` can write: dataclasses become objects, non-finite floats ``None``."""
    try:
        return _plain(obj)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{field}: cannot be stored as JSON ({exc})") from exc


def json_text(plain: Any) -> str:
    """Strict, compact JSON text of plain values (a browser parses it as it is)."""
    return json.dumps(plain, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _plain(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy / torch scalars
        return _plain(obj.item())
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return _plain(obj.to_dict())
    raise TypeError(f"{type(obj).__name__} {obj!r} is not JSON-serialisable")


def config_object(config: Any) -> dict[str, Any]:
    """A run config (mapping, dataclass or JSON object text) as a plain JSON object."""
    if isinstance(config, str):
        try:
            decoded = json.loads(config)
        except json.JSONDecodeError as exc:
            raise ValueError(f"config: not valid JSON ({exc})") from exc
        if not isinstance(decoded, dict):
            raise ValueError(f"config: must be a JSON object, got {type(decoded).__name__}")
        return plain_json(decoded, "config")
    if isinstance(config, Mapping) or (
        dataclasses.is_dataclass(config) and not isinstance(config, type)
    ):
        return plain_json(config, "config")
    raise TypeError(
        f"config: expected a mapping, a dataclass or JSON text, got {type(config).__name__}"
    )


def is_storable_text(value: object) -> bool:
    """Whether ``value`` is text SQLite can take: a lone surrogate (a client may send one) has
    no UTF-8 form, and a query with it fails instead of finding nothing."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_field(value: Any, field: str, *, optional: bool = False) -> str | None:
    """A non-empty string (paths are turned into strings); ``None`` only when optional."""
    if value is None and optional:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field}: expected a non-empty string, got {value!r}")
    return value


def epoch_or_none(value: Any, field: str) -> float | None:
    """A time in epoch seconds as a float, or ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{field}: expected epoch seconds (float) or None, got {value!r}")
    return float(value)
