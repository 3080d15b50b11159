"""JSON or YAML text from a visitor as plain data: the one parser that every config, spec and
API argument goes through, with the guards such text needs.

A size cap, nesting refused before parsing (a parser fed ``"[" * 100000`` recurses for seconds
until Python stops it), and every parser failure — syntax, recursion, an integer literal over
Python's 4,300-digit limit — reported as one :class:`TextFormatError`. JSON is tried first,
since a YAML 1.1 parser reads the JSON number ``1e-06`` as a string.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from rewards.params import MAX_NESTING, too_deep


class TextFormatError(ValueError):
    """The text is not JSON or YAML that may be parsed; the message says why."""


def load_structured(text: str, max_chars: int) -> Any:
    """``text`` (JSON or YAML, at most ``max_chars`` characters) as plain data.

    Raises:
        TextFormatError: too long, nested too deeply, or not valid JSON or YAML.
    """
    if len(text) > max_chars:
        raise TextFormatError(f"the text is over {max_chars:,} characters")
    if too_deep(text):
        raise TextFormatError(f"the text nests lists or mappings deeper than {MAX_NESTING} levels")
    try:
        try:
            return json.loads(text)
        except ValueError:
            return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TextFormatError(f"not valid JSON or YAML: {exc}") from None
    except RecursionError:
        raise TextFormatError("the text nests lists or mappings too deeply") from None
    except ValueError:  # an integer literal over Python's 4,300-digit limit
        raise TextFormatError("the text holds a number with too many digits") from None
