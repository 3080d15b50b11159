"""User-supplied regular expressions, compiled for a public server.

Patterns run on RE2 (google-re2), whose matching time is linear in the input: no pattern can
backtrack catastrophically. Patterns are bounded in length and in compiled size, and RE2 rejects
the constructs that would need backtracking (back-references, look-arounds) at compile time, so
a bad pattern fails when the spec is validated rather than when a request is scored.
"""

from __future__ import annotations

import functools

import re2

#: Longest accepted pattern, in characters.
MAX_PATTERN_CHARS = 500
#: Memory budget of one compiled pattern, in bytes (RE2 refuses patterns that would exceed it).
MAX_PATTERN_MEMORY = 1 << 22


@functools.lru_cache(maxsize=1024)
def compile_safe(pattern: str, case_sensitive: bool = True) -> re2._Regexp:
    """Compile ``pattern`` with RE2 under the bounds above.

    Raises:
        ValueError: the pattern is too long or RE2 rejects it (the message says why).
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"pattern is {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PATTERN_MEMORY
    options.case_sensitive = case_sensitive
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        reason = err.args[0] if err.args else str(err)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(f"{reason} (RE2 syntax: no back-references or look-arounds)") from None
