"""Runs one fuzz target over generated cases and records the figures RELIABILITY.md reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fuzz_values import FUZZ_SETTINGS
from hypothesis import given, settings
from hypothesis import strategies as st


def fuzz(
    record_property: Callable[[str, Any], None],
    target: Callable[..., None],
    *strategies: st.SearchStrategy[Any],
    fuzz_settings: settings = FUZZ_SETTINGS,
) -> None:
    """Call ``target(*case)`` on every case drawn from ``strategies``, then record ``fuzz_cases``
    and ``uncaught_errors``. Any exception the target lets through fails the test, so a test that
    reaches the end had none uncaught."""
    cases = 0

    @fuzz_settings
    @given(st.tuples(*strategies))
    def run(case: tuple) -> None:
        nonlocal cases
        cases += 1
        target(*case)

    run()
    record_property("fuzz_cases", cases)
    record_property("uncaught_errors", 0)
