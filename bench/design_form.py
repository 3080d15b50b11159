"""Design form latency: from a click on "Add component" or "Remove" to the redrawn form.

Starts the app (the shipped default model, a fresh data dir), opens it in Debian's chromium
(Playwright) and, on the Design tab of the default preset, adds ``conciseness`` ``--sections``
times, then removes those sections again, newest first: ``2 * sections`` clicks. Each click is
timed until the page shows the change (the new section on, or the removed one gone). Issue 25's
target: p95 under 1 s per click on the 2-core CI machine.

Usage: ``python bench/design_form.py [--sections 10]``. The last line printed is one JSON object.
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


def timed_click(page: Page, button: str, done) -> float:
    start = time.perf_counter()
    page.locator(button).click()
    done()
    return time.perf_counter() - start


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", type=int, default=10)
    args = parser.parse_args()
    adds: list[float] = []
    removes: list[float] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_app(Path(tmp) / "data") as app,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app.url)
        page.wait_for_selector("#add-component")
        for n in range(1, args.sections + 1):
            page.locator("#add-component-name input").click()
            page.get_by_role("option", name="conciseness", exact=True).click()
            slot = page.locator(slot_id(n))
            adds.append(
                timed_click(
                    page,
                    "#add-component",
                    lambda slot=slot: expect(slot).to_contain_text("● on", timeout=TIMEOUT_MS),
                )
            )
            print(f"add {n}: {adds[-1]:.2f} s", flush=True)
        for n in range(args.sections, 0, -1):
            slot = page.locator(slot_id(n))
            button = "#remove-" + slot_id(n).removeprefix("#slot-")
            removes.append(
                timed_click(
                    page,
                    button,
                    lambda slot=slot: expect(slot).to_be_hidden(timeout=TIMEOUT_MS),
                )
            )
            print(f"remove {n}: {removes[-1]:.2f} s", flush=True)
        browser.close()
    clicks = adds + removes
    print(
        json.dumps(
            {
                "clicks": len(clicks),
                "add_p50_s": round(statistics.median(adds), 2),
                "add_p95_s": round(p95(adds), 2),
                "remove_p50_s": round(statistics.median(removes), 2),
                "remove_p95_s": round(p95(removes), 2),
                "click_p95_s": round(p95(clicks), 2),
                "target_p95_s": 1.0,
            }
        )
    )


if __name__ == "__main__":
    main()
