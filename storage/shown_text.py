"""Text a visitor writes that other pages show (run names, tags, notes): no character that
hides or reorders what is around it.

Refused: control characters (NUL, escape, ...; a note keeps its newlines and tabs), lone
surrogates (they cannot be encoded, so the page or an export fails on them), line and
paragraph separators, and the bidirectional controls of Unicode's Trojan Source list
(CVE-2021-42574: U+202A-U+202E, U+2066-U+2069, and the marks U+200E, U+200F, U+061C), which
make text display in another order than it is stored. Joiners and variation selectors stay:
emoji are built from them.

Standard library only: storage, the lowest package, checks names and notes with it too.
"""

from __future__ import annotations

import unicodedata

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_WHAT = {
    "Cc": "a control character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}


def hidden_character(text: str, *, keep: str = "") -> str:
    """A description of the first character of ``text`` that :mod:`this module <.shown_text>`
    refuses (``keep``: control characters allowed, e.g. ``"\\n\\t"``), or ``""``."""
    for at, char in enumerate(text):
        if char in keep:
            continue
        if char in BIDI_CONTROLS:
            what = "a bidirectional control"
        elif unicodedata.category(char) in _WHAT:
            what = _WHAT[unicodedata.category(char)]
        else:
            continue
        return f"{what} (U+{ord(char):04X}) at character {at + 1}"
    return ""
