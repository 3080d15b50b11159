"""Design form latency: from a click on "Add component" or "Remove" to the redrawn form.

Starts the app (the shipped default model, a fresh data dir), opens it in Debian's chromium
(Playwright) and, on the Design tab of the default preset, adds ``conciseness`` ``--sections``
times (20, the most the form holds), then removes those sections again, newest first:
``2 * sections`` clicks. Each click is timed twice: until the page shows the change (the new
section on, or the removed one gone: the editor draws it in the page) and until the server's
answer reached the page (the spec summary names the new metric, or no longer does). Issue 25's
target: the redraw's p95 under 1 s per click on the 2-core CI machine.

Usage: ``python bench/design_form.py [--sections 20]``. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS, running_app

TIMEOUT_MS = 120_000


def slot_id(n: int) -> str:
    return "#slot-conciseness" if n == 1 else f"#slot-conciseness-{n}"


def metric(n: int) -> str:
    """The spec summary's words for the n-th section (``conciseness ×``, ``conciseness_2 ×``)."""
    return "conciseness ×" if n == 1 else f"conciseness_{n} ×"


def timed_click(page: Page, button: str, drawn, answered) -> tuple[float, float]:
    """Seconds from the click until ``drawn()`` and until ``answered()`` return."""
    start = time.perf_counter()
    page.locator(button).click()
    drawn()
    at_drawn = time.perf_counter() - start
    answered()
    return at_drawn, time.perf_counter() - start


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", type=int, default=20)
    args = parser.parse_args()
    adds: list[float] = []
    removes: list[float] = []
    answers: list[float] = []  # click -> the server's check of it in the page
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_app(Path(tmp) / "data") as app,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app.url)
        page.wait_for_selector("#add-component")
        status = page.locator("#spec-status")
        page.locator("#add-component-name").select_option("conciseness")
        for n in range(1, args.sections + 1):
            slot = page.locator(slot_id(n))
            drawn, answered = timed_click(
                page,
                "#add-component",
                lambda slot=slot: expect(slot).to_contain_text("● on", timeout=TIMEOUT_MS),
                lambda n=n: expect(status).to_contain_text(metric(n), timeout=TIMEOUT_MS),
            )
            adds.append(drawn)
            answers.append(answered)
            print(f"add {n}: drawn {drawn:.3f} s, answered {answered:.3f} s", flush=True)
        for n in range(args.sections, 0, -1):
            slot = page.locator(slot_id(n))
            button = "#remove-" + slot_id(n).removeprefix("#slot-")
            drawn, answered = timed_click(
                page,
                button,
                lambda slot=slot: expect(slot).to_be_hidden(timeout=TIMEOUT_MS),
                lambda n=n: expect(status).not_to_contain_text(metric(n), timeout=TIMEOUT_MS),
            )
            removes.append(drawn)
            answers.append(answered)
            print(f"remove {n}: drawn {drawn:.3f} s, answered {answered:.3f} s", flush=True)
        browser.close()
    clicks = adds + removes
    print(
        json.dumps(
            {
                "clicks": len(clicks),
                "add_p50_s": round(statistics.median(adds), 3),
                "add_p95_s": round(p95(adds), 3),
                "remove_p50_s": round(statistics.median(removes), 3),
                "remove_p95_s": round(p95(removes), 3),
                "click_p95_s": round(p95(clicks), 3),
                "answered_p50_s": round(statistics.median(answers), 3),
                "answered_p95_s": round(p95(answers), 3),
                "target_p95_s": 1.0,
            }
        )
    )


if __name__ == "__main__":
    main()
