"""Run a coroutine to the end on an event loop of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_in_fresh_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` in a thread of its own: a session-wide browser fixture (Playwright's sync
    API) may hold a running loop in the test's thread, where `asyncio.run` refuses to start."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
