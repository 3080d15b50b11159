"""Switching runs in the Runs tab, timed in a real browser (issue 45, deliverable 2: the status
within 1 s and the charts within 2 s at load 2 on the 2-core machine).

Starts ``python app.py`` on a fresh data dir holding ``--runs`` finished GRPO runs of about
``--steps`` steps each (the metrics a GRPO worker logs at every step, samples every 5 steps),
opens the Runs tab in Debian's Chromium and picks each run in turn from the Run menu,
``--switches`` times. Each switch is timed in the page from the option's click to:

- ``status``: the status line names the picked run;
- ``chart``: the reward chart holds the picked run's points (each run has its own step count).

``--load N`` keeps N busy processes beside it (the machine's other work; ``os.getloadavg`` is
printed). Prints a row per switch and one JSON line.

    python bench/run_switch.py [--runs 3] [--steps 300] [--switches 12] [--load 0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.tracking import metric_names as m  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: What a GRPO worker logs at every step (the panels' series), beside the reward components.
STEP_METRICS = (
    m.REWARD_TOTAL, m.REWARD_TOTAL_STD, m.REWARD_ZERO_STD_FRACTION, m.LOSS_POLICY,
    m.POLICY_ENTROPY, m.POLICY_CLIP_RATIO, m.COMPLETION_MEAN_LENGTH, m.COMPLETION_MAX_LENGTH,
    m.COMPLETION_CLIPPED_RATIO, m.GRAD_NORM, m.LEARNING_RATE, m.EPOCH, m.STEP_TIME,
    m.TOKENS_PER_S, m.NUM_TOKENS, m.GENERATION_TIME, m.REWARD_TIME, m.GEN_LOGPROB_GAP,
    "rewards/correctness/mean", "rewards/format/mean", "rewards/correctness/std",
    "rewards/format/std",
)  # fmt: skip
EVAL_EVERY = 25

# Installed before each pick: resolves with [status ms, chart ms] once both show the new run.
WATCH = """([name, points]) => { window.switchTimes = null; const t0 = performance.now();
  let status = null, chart = null;
  const look = () => {
    const now = performance.now() - t0;
    const line = document.querySelector('#run-status');
    if (status === null && line && line.innerText.includes(name)) status = now;
    const plot = document.querySelector('#chart-reward .js-plotly-plot');
    if (chart === null && plot && plot.data && plot.data.length
        && plot.data[0].x.length === points) chart = now;
    if ((status !== null && chart !== null) || now > 60000) window.switchTimes = [status, chart];
    else requestAnimationFrame(look);
  };
  requestAnimationFrame(look); }"""


def seed_runs(data_dir: Path, runs: int, steps: int) -> list[tuple[str, str, int]]:
    """``runs`` completed runs of ``steps``, ``steps - 7``, ... steps: (id, name, steps)."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.records import samples as sample_store
    from storage.records.metrics import MetricWriter
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    made = []
    with Database(db_path(data_dir)) as db:
        for r in range(runs):
            n = steps - 7 * r
            name = f"switch run {r + 1}"
            run = run_store.create_run(
                db, algorithm="grpo", name=name, config={"training": {"steps": n}},
                total_steps=n, status=RunStatus.RUNNING,
            )  # fmt: skip
            with MetricWriter(db, run.id) as writer:
                for step in range(1, n + 1):
                    values = {k: math.sin(step / 17 + i) for i, k in enumerate(STEP_METRICS)}
                    if step % EVAL_EVERY == 0:
                        values[m.EVAL_ACCURACY] = step / n
                    writer.log(step, values)
            for step in range(5, n + 1, 5):
                rows = [
                    {"prompt": f"q{step}-{i}", "completion": "<answer>4</answer>", "total": 1.0}
                    for i in range(8)
                ]
                sample_store.add_samples(db, run.id, step, rows)
            run_store.set_status(db, run.id, RunStatus.COMPLETED)
            made.append((run.id, name, n))
    return made


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(data_dir: Path) -> Iterator[str]:
    port = _free_port()
    log = open(data_dir.parent / "app.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url, timeout=2)
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"the app did not start; see {log.name}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _busy() -> None:
    while True:
        pass


@contextlib.contextmanager
def load(n: int) -> Iterator[None]:
    procs = [mp.Process(target=_busy, daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--switches", type=int, default=12)
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the app")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    data_dir = Path(tempfile.mkdtemp(prefix="run-switch-")) / "data"
    data_dir.mkdir()
    runs = seed_runs(data_dir, args.runs, args.steps)
    times: list[tuple[float | None, float | None]] = []
    with running_app(data_dir) as url, load(args.load), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector("#main-tabs")
        page.get_by_role("tab", name="Runs", exact=True).click()
        print(f"{'switch':>6} {'to run':<14} {'status s':>9} {'chart s':>8} {'load':>5}")
        for i in range(args.switches + 1):  # the first pick opens the tab's first run: not timed
            _, name, points = runs[i % len(runs)]
            page.locator("#run-select input").click()
            option = page.get_by_role("option", name=name)
            option.wait_for()
            page.evaluate(WATCH, [name, points])
            option.click()
            page.wait_for_function("() => window.switchTimes !== null", timeout=70_000)
            status, chart = (
                None if t is None else t / 1000 for t in page.evaluate("window.switchTimes")
            )
            if i:
                times.append((status, chart))
                shown = [f"{t:9.2f}" if t is not None else "   missed" for t in (status, chart)]
                print(f"{i:>6} {name:<14} {shown[0]} {shown[1]:>8} {os.getloadavg()[0]:5.1f}")
            time.sleep(1.5)  # a user reads the run before picking the next
        browser.close()
    statuses = [s for s, _ in times if s is not None]
    charts = [c for _, c in times if c is not None]
    print(
        json.dumps(
            {
                "switches": len(times),
                "runs": args.runs,
                "steps": args.steps,
                "busy_processes": args.load,
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "status_p50_s": round(statistics.median(statuses), 3) if statuses else None,
                "status_max_s": round(max(statuses), 3) if statuses else None,
                "chart_p50_s": round(statistics.median(charts), 3) if charts else None,
                "chart_max_s": round(max(charts), 3) if charts else None,
                "missed": sum(s is None or c is None for s, c in times),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
