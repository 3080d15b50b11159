"""Screenshots of every dashboard tab for the docs: ``python docs/take_screenshots.py``.

Starts the app on a temporary data dir, trains two short runs on the default model (GRPO and
RLOO, through the app's API), generates a preview, and captures each tab with Debian's chromium
(``/usr/bin/chromium``, driven by Playwright) into ``docs/screenshots/``. Takes a few minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
RUNS = [
    {
        "name": "GRPO demo",
        "algorithm": "grpo",
        "training": {"steps": 12, "prompts_per_step": 4, "eval_samples": 24, "eval_steps": 4},
        "generation": {"num_generations": 8, "max_completion_length": 96},
    },
    {
        "name": "RLOO demo",
        "algorithm": "rloo",
        "training": {"steps": 12, "prompts_per_step": 4, "eval_samples": 24, "eval_steps": 4},
        "generation": {"num_generations": 8, "max_completion_length": 96},
    },
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the app exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the app did not start")


def train(url: str) -> list[str]:
    from gradio_client import Client

    client = Client(url, verbose=False)
    ids = [client.predict(config=yaml.safe_dump(r), api_name="/start_run")["run_id"] for r in RUNS]
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        statuses = [client.predict(run_id=i, api_name="/run_status")["status"] for i in ids]
        print("runs:", statuses, flush=True)
        if all(s not in ("queued", "running") for s in statuses):
            break
        time.sleep(5)
    return ids


def capture(url: str, run_ids: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(300_000)
        page.goto(f"{url}?run={run_ids[0]}")
        page.wait_for_selector("#main-tabs")
        time.sleep(2)

        def tab(name: str) -> None:
            page.get_by_role("tab", name=name, exact=True).click()
            time.sleep(2)

        def shot(name: str, full: bool = True) -> None:
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=full)
            print("wrote", OUT / f"{name}.png")

        tab("Design")  # a ?run= link opens on Runs
        shot("design")
        tab("Preview")
        for elem_id, value in (("preview-prompts", 3), ("preview-samples", 4)):
            box = page.locator(f"#{elem_id} input")
            box.fill(str(value))
            box.press("Tab")
        page.locator("#preview-generate").click()
        # A dataframe's body rows and cells (Gradio 6.26 gives them no grid roles).
        page.locator("#preview-table div.virtual-row").nth(11).wait_for()
        page.locator("#preview-table div.virtual-row").first.locator(".body-cell").nth(2).click()
        page.locator("#preview-probes div.virtual-row").first.wait_for()
        time.sleep(2)
        shot("preview")
        tab("Train")
        shot("train")
        tab("Runs")
        page.wait_for_function(
            "() => { const el = document.querySelector('#chart-reward .js-plotly-plot');"
            " return el && el.data && el.data.length > 0; }"
        )
        time.sleep(2)
        shot("runs")
        tab("Compare")
        box = page.locator("#compare-runs input")
        for run in RUNS:
            box.click()
            page.get_by_role("option", name=re.compile(re.escape(run["name"]))).click()
            time.sleep(2)
        page.keyboard.press("Escape")
        page.locator("#compare-metric input").click()  # a second metric, in its own panel
        page.get_by_role("option", name="eval/accuracy", exact=True).click()
        page.keyboard.press("Escape")
        page.wait_for_function(
            "() => { const el = document.querySelector('#compare-chart .js-plotly-plot');"
            " return el && el.data && el.data.length === 4; }"
        )
        time.sleep(2)
        shot("compare")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="reuse a data dir that already has runs")
    args = parser.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="studio-shots-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "STUDIO_MAX_CONCURRENT_RUNS": "2", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "app.py", "--data-dir", str(data_dir), "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_up(url, proc)
        capture(url, train(url))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
