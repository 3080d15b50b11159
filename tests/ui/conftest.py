"""Fixtures of the UI tests: a live app in a subprocess and a headless Debian chromium.

The app runs as ``python app.py --data-dir TMP --port FREE`` exactly as a user starts it, and is
always terminated, together with any training worker it launched (workers run detached in
their own session, so they are stopped here by their recorded pid).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ui.shared.context import AppContext

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
START_TIMEOUT_S = 120


@pytest.fixture
def ctx(data_dir) -> Iterator[AppContext]:
    """The app's context over the test's data dir, closed after the test."""
    context = AppContext(data_dir)
    yield context
    context.close()


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> tuple[Path, str]:
    """``(data dir, run id)`` of a tiny Llama trained 2 steps (checkpoint-1, checkpoint-2 and
    final/), owned by the local viewer; trained once for the Playground, ``/generate`` and model
    export tests, which only read it."""
    from tests.in_process_run import train_tiny_llama

    return train_tiny_llama(tmp_path_factory.mktemp("tiny-run"), "Tiny", eval_samples=0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveApp:
    url: str
    data_dir: Path
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _wait_up(app: LiveApp) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if app.process.poll() is not None:
            raise RuntimeError(f"app exited with {app.process.returncode}:\n{app.log()[-4000:]}")
        try:
            with urllib.request.urlopen(app.url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"app did not answer in {START_TIMEOUT_S} s:\n{app.log()[-4000:]}")


def _stop_workers(data_dir: Path) -> None:
    """Kill the process groups of runs the app started that are still alive (read without the
    write lock, which a worker stuck mid-write may hold)."""
    import sqlite3

    from storage.paths import db_path

    if not db_path(data_dir).exists():
        return
    with contextlib.closing(sqlite3.connect(f"file:{db_path(data_dir)}?mode=ro", uri=True)) as con:
        pids = [pid for (pid,) in con.execute("SELECT pid FROM run WHERE pid IS NOT NULL")]
    # A run recorded in this process (an in-process test run) names pytest's own group.
    ours = {os.getpid(), os.getpgrp()}
    for pid in (p for p in pids if p not in ours):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_app(
    data_dir: Path, env: dict[str, str] | None = None, *, pass_data_dir: bool = True
) -> Iterator[LiveApp]:
    """The app on a free port; ``pass_data_dir=False`` lets it choose ``data_dir`` itself (as
    on a Space), from ``env``."""
    port = free_port()
    log_path = data_dir.parent / f"app-{port}.log"
    full_env = {**os.environ, "STUDIO_DATA_DIR": str(data_dir), **(env or {})}
    argv = [sys.executable, "app.py", "--port", str(port)]
    if pass_data_dir:
        argv += ["--data-dir", str(data_dir)]
    else:
        full_env.pop("STUDIO_DATA_DIR")
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    app = LiveApp(f"http://127.0.0.1:{port}/", data_dir, process, log_path)
    try:
        _wait_up(app)
        yield app
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        _stop_workers(data_dir)


@pytest.fixture(scope="session")
def start_app():
    """``start_app(data_dir, env)``: a context manager running another app (e.g. with login)."""
    return running_app


@pytest.fixture(scope="session")
def live_app(tmp_path_factory) -> Iterator[LiveApp]:
    """The app on a free port with a fresh data dir, shared by the UI tests."""
    data_dir = tmp_path_factory.mktemp("studio") / "data"
    data_dir.mkdir()
    with running_app(data_dir) as app:
        yield app


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium driven by Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    # The app answers through a queue on a busy 2-core machine: allow updates some seconds
    # (CI's run of this suite once took twice this machine's time, and two waits of 20 s ran
    # out). A wait that holds returns at once; only a failing one waits this long.
    expect.set_options(timeout=40_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(request, browser, live_app, tmp_path):
    """A fresh browser tab on the app (a test marked ``opens_a_link`` gets it blank and opens
    its own link first: a page load is seconds here); on failure its screenshot and the app log
    are kept in the test's tmp dir (the paths are printed with the failure)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(45_000)
    if request.node.get_closest_marker("opens_a_link") is None:
        page.goto(live_app.url)
        page.wait_for_selector("#main-tabs", timeout=60_000)
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        shot = tmp_path / "failure.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}\napp log tail:\n{live_app.log()[-3000:]}")
    context.close()
