"""Screenshots of the reward lab for docs/reward_lab.md.

``python docs/lab_screenshots.py DATA_DIR RUN_ID``

Starts the app on ``DATA_DIR`` (which holds the finished run ``RUN_ID``, e.g. one trained with
the "hand-tuned GRPO script" preset), generates a preview with the default model, and captures
with Debian's chromium (Playwright) into ``docs/screenshots/``: the A/B of "R1-style math" against
"hand-tuned GRPO script", a sweep of the language weight, and the run re-scored with "R1-style
math".
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from take_screenshots import CHROMIUM, CHROMIUM_ARGS, OUT, ROOT, free_port, wait_up


def choose(page, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def wait_plot(page, elem_id: str) -> None:
    page.wait_for_function(
        "(id) => { const el = document.querySelector(`#${id} .js-plotly-plot`);"
        " return el && el.data && el.data.length > 0; }",
        arg=elem_id,
    )
    time.sleep(2)


def capture(url: str, run_id: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(300_000)
        page.goto(url)
        page.wait_for_selector("#main-tabs")
        page.get_by_role("tab", name="Preview", exact=True).click()
        for elem_id, value in (("preview-prompts", 8), ("preview-samples", 8)):
            box = page.locator(f"#{elem_id} input")
            box.fill(str(value))
            box.press("Tab")
        page.locator("#preview-generate").click()
        page.locator("#preview-table div.virtual-row").nth(4).wait_for()
        page.get_by_text("Reward lab: compare specs and sweep weights").click()
        choose(page, "lab-source-0", "hand-tuned GRPO script")
        page.locator("#lab-compare").click()
        page.locator("#lab-ab-table div.virtual-row").nth(4).wait_for()
        time.sleep(2)
        page.locator("#preview-lab").screenshot(path=str(OUT / "lab_ab.png"))

        # The sweep runs on the Design tab's spec: load the hand-tuned preset there.
        page.get_by_role("tab", name="Design", exact=True).click()
        choose(page, "preset", "hand-tuned GRPO script")
        page.locator("#load-preset").click()
        time.sleep(4)
        page.get_by_role("tab", name="Preview", exact=True).click()
        page.get_by_role("tab", name="Weight sweep").click()
        choose(page, "lab-weight-1", "language")
        for elem_id, value in (("lab-from-1", 0), ("lab-to-1", 1), ("lab-points-1", 101)):
            box = page.locator(f"#{elem_id} input")
            box.fill(str(value))
            box.press("Tab")
        page.locator("#lab-sweep").click()
        wait_plot(page, "lab-sweep-plot")
        page.locator("#preview-lab").screenshot(path=str(OUT / "lab_sweep.png"))

        page.goto(f"{url}?run={run_id}")
        page.wait_for_selector("#main-tabs")
        page.get_by_text("Re-score with…").click()
        choose(page, "rescore-source", "R1-style math")
        page.locator("#rescore-run").click()
        wait_plot(page, "rescore-plot")
        page.locator("#runs-rescore").screenshot(path=str(OUT / "lab_rescore.png"))
        browser.close()
    print("wrote", *(OUT / f"lab_{n}.png" for n in ("ab", "sweep", "rescore")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir")
    parser.add_argument("run_id")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = subprocess.Popen(
        [sys.executable, "app.py", "--data-dir", str(Path(args.data_dir)), "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_up(url, proc)
        capture(url, args.run_id)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
