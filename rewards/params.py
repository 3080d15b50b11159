"""Machine-readable parameter descriptors and component descriptions.

The UI form and the CLI help are generated from these, so each descriptor carries everything a
form needs: type, default, allowed range or choices, and a one-line doc. Validation lives here
too, so the spec, the factories and the UI reject the same values with the same message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rewards.errors import RewardSpecError
from rewards.input_guards.describe import MAX_ABS_INT, SHOWN_CHARS, describe_value

if TYPE_CHECKING:
    from rewards.components.base import RewardComponent

ParamType = Literal["float", "int", "bool", "str", "list"]

#: Deepest nesting of ``[``/``{`` accepted in spec or config text; real ones nest 3-4 levels.
MAX_NESTING = 64
_BRACKETS = re.compile(r"[\[\]{}]")
# YAML nests without brackets too: "- - - ..." on one line, or ever deeper indentation.
_BLOCK_NESTING = re.compile(rf"(?:[-?]\s+){{{MAX_NESTING}}}|^[ \t]{{{8 * MAX_NESTING}}}", re.M)


def too_deep(text: str) -> bool:
    """Whether JSON/YAML ``text`` nests brackets deeper than ``MAX_NESTING``.

    Checked before parsing: a parser fed ``"[" * 10000`` recurses until Python stops it, which
    costs seconds per request. Brackets inside quoted strings count too, which only makes the
    check stricter for texts that no real spec or config resembles.
    """
    if _BLOCK_NESTING.search(text):
        return True
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_NESTING:
            return True
    return False


def key_name(key: Any) -> str:
    """A mapping key as it reads in an error's field path: plain names as they are, anything
    else (empty, odd characters, not a string) quoted or described, so the path prints."""
    if isinstance(key, str) and key.isidentifier() and len(key) <= SHOWN_CHARS:
        return key
    return describe_value(key)


def refuse_unknown_keys(
    data: Mapping[Any, Any],
    allowed: Sequence[str],
    path: str,
    error: Callable[[str, str], Exception],
) -> None:
    """Raise ``error(field, message)`` for the first key of ``data`` that is not in ``allowed``
    (a spec, a component, a config section): the field is that key under ``path``, the message
    lists what is allowed."""
    for key in data:
        if not isinstance(key, str) or key not in allowed:
            where = f"{path}.{key_name(key)}" if path else key_name(key)
            raise error(where, f"unknown field; allowed: {', '.join(allowed)}")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (a NUL character, an unpaired surrogate), or None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (it holds an unpaired surrogate)"
    return None


@dataclass(frozen=True)
class Bounds:
    """A numeric range, inclusive unless ``lo_open`` (``(0, 1]``) or ``hi_open`` (``[0, 1)``):
    the one range check that config fields, reward parameters and component weights share.

    Attributes:
        lo, hi: the bounds (``None``: unbounded on that side).
        lo_open: the lower bound itself is refused.
        lo_field: for a config field, a sibling field whose value is the lower bound instead of
            ``lo`` (``epsilon_high`` is at least ``epsilon``).
        hi_open: the upper bound itself is refused (a dropout or a share below 1).
    """

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    lo_field: str | None = None
    hi_open: bool = False

    def describe(self, lo: float | None = None, fmt: Callable[[Any], str] | None = None) -> str:
        """The range as ``[1, 64]``, ``(0, 2]`` or ``[0, 1)``; ``lo`` is the resolved ``lo_field``
        value (without it the field's name stands for the bound); ``fmt`` prints a bound."""
        fmt = fmt or exact_number
        low = lo if lo is not None else self.lo
        shown = self.lo_field if low is None and self.lo_field else fmt(low)
        opening, closing = "(" if self.lo_open else "[", ")" if self.hi_open else "]"
        return f"{opening}{shown}, {fmt(self.hi)}{closing}"

    def contains(self, value: Any, lo: float | None = None) -> bool:
        """Whether ``value`` is a finite real number (not a bool) inside the range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        low = self.lo if lo is None else lo
        if low is not None and (value <= low if self.lo_open else value < low):
            return False
        return self.hi is None or (value < self.hi if self.hi_open else value <= self.hi)

    def problem(self, value: Any, lo: float | None = None) -> str | None:
        """Why ``value`` is outside the range, in the words of an error message, or None."""
        if self.contains(value, lo):
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, got {describe_value(value)}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, got {value!r}"
        shown = describe_value(value) if abs(value) > MAX_ABS_INT else exact_number(value)
        return f"must be in {self.describe(lo)}, got {shown}"


def exact_number(x: float | None) -> str:
    """A bound or value as short as it prints exactly (``1e+06``, ``2147483647``, ``0.2``)."""
    if x is None:
        return "…"
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a reward component.

    Attributes:
        name: keyword the factory takes.
        type: ``float`` | ``int`` | ``bool`` | ``str`` | ``list`` (a list of strings).
        default: value used when the spec leaves the parameter out.
        doc: one line for a form label or ``--help``.
        min, max: inclusive bounds for ``float``/``int``.
        choices: allowed values of a ``str``, or of each item of a ``list``.
        max_length: longest allowed ``str`` (or list item), in characters.
        max_items: longest allowed ``list``.
        regex: the string (or each list item) is a regular expression; it must compile under the
            linear-time engine the ``rule`` and ``reasoning_steps`` components use (RE2 syntax).
    """

    name: str
    type: ParamType
    default: Any
    doc: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    max_length: int | None = None
    max_items: int | None = None
    regex: bool = False

    @property
    def bounds(self) -> Bounds:
        """The allowed range of a ``float``/``int`` parameter."""
        return Bounds(self.min, self.max)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (for forms and CLI help)."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "default": None}
        for key in ("min", "max", "max_length", "max_items"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.regex:
            out["regex"] = True
        out["doc"] = self.doc
        out["default"] = _plain(self.default)
        return out

    def describe_allowed(self) -> str:
        """What the parameter accepts, in words (used in error messages and help)."""
        if self.type in ("float", "int"):
            kind = "a number" if self.type == "float" else "an integer"
            return f"{kind} in {self.bounds.describe(fmt=_fmt)}"
        if self.type == "bool":
            return "true or false"
        if self.type == "str":
            if self.choices is not None:
                return "one of " + ", ".join(repr(c) for c in self.choices)
            return f"a string of at most {self.max_length} characters"
        item = "one of " + ", ".join(self.choices) if self.choices else "strings"
        return f"a list of at most {self.max_items} {item}"

    def validate(self, value: Any) -> Any:
        """Return ``value`` checked and normalised (ints accepted for floats, lists as tuples).

        Raises:
            RewardSpecError: naming this parameter, what was wrong and what is allowed.
        """
        allowed = self.describe_allowed()
        if self.type == "bool":
            if not isinstance(value, bool):
                raise RewardSpecError(self.name, f"must be {allowed}, got {describe_value(value)}")
            return value
        if self.type in ("float", "int"):
            return self._validate_number(value, allowed)
        if self.type == "str":
            return self._validate_str(value, allowed, self.name)
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise RewardSpecError(self.name, f"must be {allowed}, got {describe_value(value)}")
        if self.max_items is not None and len(value) > self.max_items:
            raise RewardSpecError(self.name, f"must be {allowed}, got {len(value)} items")
        return [
            self._validate_str(item, allowed, f"{self.name}[{i}]") for i, item in enumerate(value)
        ]

    def _validate_number(self, value: Any, allowed: str) -> float | int:
        def refused() -> RewardSpecError:
            return RewardSpecError(self.name, f"must be {allowed}, got {describe_value(value)}")

        if isinstance(value, int) and abs(value) > MAX_ABS_INT:
            raise refused()
        if self.type == "int" and isinstance(value, float):
            if not value.is_integer():
                raise refused()
            value = int(value)
        if not self.bounds.contains(value):
            raise refused()
        return value if self.type == "int" else float(value)

    def _validate_str(self, value: Any, allowed: str, field_name: str) -> str:
        if not isinstance(value, str):
            raise RewardSpecError(field_name, f"must be {allowed}, got {describe_value(value)}")
        problem = text_problem(value)
        if problem:
            raise RewardSpecError(field_name, problem)
        if self.choices is not None and value not in self.choices:
            raise RewardSpecError(field_name, f"must be {allowed}, got {describe_value(value)}")
        if self.max_length is not None and len(value) > self.max_length:
            raise RewardSpecError(
                field_name,
                f"must be at most {self.max_length} characters, got {len(value)}",
            )
        if self.regex:
            from rewards.input_guards.safe_regex import compile_safe

            try:
                compile_safe(value)
            except ValueError as err:
                raise RewardSpecError(field_name, f"invalid regular expression: {err}") from None
        return value


def with_defaults(specs: Sequence[ParamSpec], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with every parameter it leaves out at its ParamSpec default, so a component's
    constructor states no default of its own. An unknown name raises ``TypeError``, as a call
    with an unknown keyword would (values are checked by :meth:`ComponentInfo.validate_params`).
    """
    defaults = {p.name: p.default for p in specs}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"unknown parameter {unknown[0]!r}; allowed: {', '.join(defaults)}")
    return {**defaults, **given}


def _plain(value: Any) -> Any:
    """A parameter value as JSON would hold it (tuples become lists)."""
    return list(value) if isinstance(value, tuple) else value


def _fmt(x: float | None) -> str:
    if x is None:
        return "…"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return f"{x:.1f}"
    return str(x)


@dataclass(frozen=True)
class ComponentInfo:
    """A reward component as the registry lists it.

    Attributes:
        name: registry key and default metric name (``rewards/<name>/mean`` in TRL's logs).
        factory: builds the batch-wise reward function from validated parameters; called as
            ``factory(name=metric_name, **params)``.
        params: the parameters, in form order.
        description: one or two sentences for users.
        source: where the formula comes from (paper or reference implementation).
        allow_multiple: whether one spec may hold several instances (``rule`` does).
        check: optional cross-parameter check, raising :class:`RewardSpecError` with the field.
    """

    name: str
    factory: Callable[..., RewardComponent]
    params: tuple[ParamSpec, ...]
    description: str
    source: str
    allow_multiple: bool = False
    check: Callable[[Mapping[str, Any]], None] | None = field(default=None, repr=False)

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {p.name: _plain(p.default) for p in self.params}

    def validate_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Fill defaults, reject unknown names and bad values; returns the full parameter dict."""
        if not isinstance(params, Mapping):
            raise RewardSpecError("", f"params must be a mapping, got {type(params).__name__}")
        known = {p.name for p in self.params}
        for key in params:
            if key not in known:
                allowed = ", ".join(sorted(known)) or "none"
                raise RewardSpecError(
                    key_name(key),
                    f"unknown parameter of {self.name!r}; allowed: {allowed}",
                )
        out = {
            p.name: p.validate(params[p.name]) if p.name in params else _plain(p.default)
            for p in self.params
        }
        if self.check is not None:
            self.check(out)
        return out

    def build(
        self, params: Mapping[str, Any] | None = None, name: str | None = None
    ) -> RewardComponent:
        """Validate ``params``; build the reward function named ``name`` (default: its own)."""
        return self.factory(name=name or self.name, **self.validate_params(params or {}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description, for forms and CLI help."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "allow_multiple": self.allow_multiple,
            "params": [p.to_dict() for p in self.params],
        }
