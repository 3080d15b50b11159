"""A unit converter tool: length, mass, time, volume and temperature, from a fixed table.

Factors are the SI definitions (NIST SP 811, Appendix B): each unit is its size in the SI base
unit of its kind; temperatures convert through kelvin with their offsets.
"""

from __future__ import annotations

import math

from engine.tools.calculator import format_number
from engine.tools.errors import ToolError

# unit -> (kind, size in the kind's SI unit)
_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 1e-3),
    "cm": ("length", 1e-2),
    "m": ("length", 1.0),
    "km": ("length", 1e3),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mg": ("mass", 1e-6),
    "g": ("mass", 1e-3),
    "kg": ("mass", 1.0),
    "t": ("mass", 1e3),
    "oz": ("mass", 0.028349523125),
    "lb": ("mass", 0.45359237),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
    "day": ("time", 86400.0),
    "week": ("time", 604800.0),
    "ml": ("volume", 1e-6),
    "l": ("volume", 1e-3),
    "m3": ("volume", 1.0),
    "gal": ("volume", 3.785411784e-3),
}
# temperature unit -> (scale, offset): kelvin = value * scale + offset
_TEMPERATURES: dict[str, tuple[float, float]] = {
    "c": (1.0, 273.15),
    "k": (1.0, 0.0),
    "f": (5 / 9, 273.15 - 32 * 5 / 9),
}
MAX_MAGNITUDE = 1e15


def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, time, volume or temperature.

    Args:
        value: The amount to convert, e.g. 3.5.
        from_unit: Its unit, e.g. km, mi, kg, lb, h, l, gal, C or F.
        to_unit: The unit wanted, of the same kind.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"value must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise ToolError(f"value must be a finite number of at most {MAX_MAGNITUDE:g}")
    src, dst = _unit(from_unit), _unit(to_unit)
    if src in _TEMPERATURES or dst in _TEMPERATURES:
        if not (src in _TEMPERATURES and dst in _TEMPERATURES):
            raise ToolError(f"cannot convert {from_unit} to {to_unit}: different kinds")
        scale, offset = _TEMPERATURES[src]
        back_scale, back_offset = _TEMPERATURES[dst]
        result = (value * scale + offset - back_offset) / back_scale
    else:
        (kind, size), (to_kind, to_size) = _UNITS[src], _UNITS[dst]
        if kind != to_kind:
            raise ToolError(f"cannot convert {from_unit} ({kind}) to {to_unit} ({to_kind})")
        result = value * size / to_size
    return f"{format_number(round(result, 10))} {to_unit}"


def _unit(name: object) -> str:
    if not isinstance(name, str) or len(name) > 10:
        raise ToolError("a unit is a short name such as km, lb or C")
    key = name.strip().lower()
    if key not in _UNITS and key not in _TEMPERATURES:
        raise ToolError(f"unknown unit {name!r}; known: {', '.join(known_units())}")
    return key


def known_units() -> list[str]:
    """Every unit name the converter accepts."""
    return [*_UNITS, *(u.upper() for u in _TEMPERATURES)]
