"""Page-load time while one client floods a public app with cheap events.

Starts ``python app.py`` as a public app (``STUDIO_PUBLIC=1``) on a fresh data dir, measures a
fresh visitor's page load (``GET /``, ``GET /config`` and the page's load event through the
queue, as a browser opening the page does) idle, then again while one client sends
``--parallel`` (100) requests at once without pause, in each ``--mode``:

- ``events``: queue events, each on a new session (the runs list's ``tick`` poll and
  ``/list_runs``), keeping no cookie;
- ``cookies``: the same, each from a new visitor cookie (fetched first, as ``GET /config``
  gives one);
- ``calls``: ``POST /gradio_api/call/list_runs`` and its result stream;
- ``reload``: ``GET /gradio_api/dev/reload`` streams (404 on a public app).

The flooder and the visitor come through a proxy on this machine, as on a Space: each sends
its own ``X-Forwarded-For`` address. Prints a table, then one JSON line:
``{"idle_page_load_median_s": ..., "worst_page_load_p95_s": ..., "modes": {mode: {...}}}``.

    python bench/flood.py [--parallel 100] [--loads 20] [--mode events cookies calls reload]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def public_app(data_dir: Path, extra_env: dict[str, str] | None = None):
    port = free_port()
    env = {
        **os.environ,
        "STUDIO_PUBLIC": "1",
        "STUDIO_DATA_DIR": str(data_dir),
        **(extra_env or {}),
    }
    for name in ("SPACE_ID", "STUDIO_AUTH", "STUDIO_USERNAME", "STUDIO_PASSWORD"):
        env.pop(name, None)
    log = open(data_dir.parent / "app.log", "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the app did not start; see app.log")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def event(http: httpx.Client, fn_index: int, session: str, trigger: int | None = None) -> int:
    """Join one event and read its stream to the end; the join's HTTP status."""
    body = {"data": [], "fn_index": fn_index, "trigger_id": trigger, "session_hash": session}
    joined = http.post("/gradio_api/queue/join", json=body)
    if joined.status_code != 200:
        return joined.status_code
    with http.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as s:
        for line in s.iter_lines():
            if line.startswith("data:") and '"process_completed"' in line:
                break
    return 200


PARTS: dict[str, list[float]] = {"page": [], "load event": []}


VISITOR = {"X-Forwarded-For": "10.1.1.1"}
FLOODER = {"X-Forwarded-For": "10.9.9.9"}
MODES = ("events", "cookies", "calls", "reload")


def page_load(url: str) -> float:
    """Seconds a fresh visitor takes to load the page and run its load events, as a browser
    does: one session, every load event joined at once, their results read from the session's
    one stream (the two parts are kept in ``PARTS``). A refused join fails the load."""
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120, headers=VISITOR) as http:
        http.get("/").raise_for_status()
        config = http.get("/config").json()
        page = time.perf_counter()
        session = secrets.token_hex(6)
        loads = {
            dep.get("id", i): next((t[0] for t in dep["targets"] if t[1] == "load"), None)
            for i, dep in enumerate(config["dependencies"])
            if any(t[1] == "load" for t in dep["targets"])
        }
        joins = [{"data": [], "fn_index": fn, "trigger_id": t} for fn, t in loads.items()]
        with ThreadPoolExecutor(len(joins)) as pool:
            answers = list(
                pool.map(
                    lambda body: http.post(
                        "/gradio_api/queue/join", json={**body, "session_hash": session}
                    ),
                    joins,
                )
            )
        for joined in answers:
            joined.raise_for_status()
        completed = 0
        with http.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as s:
            for line in s.iter_lines():
                completed += line.startswith("data:") and '"process_completed"' in line
                if completed == len(joins):
                    break
    done = time.perf_counter()
    PARTS["page"].append(page - started)
    PARTS["load event"].append(done - page)
    return done - started


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def flood_once(http: httpx.Client, mode: str, target: tuple[int, int | None]) -> int:
    """One request of the flood in ``mode``; its HTTP status."""
    http.cookies.clear()
    if mode == "cookies":
        http.get("/theme.css")  # a new visitor cookie, kept for the event
    if mode in ("events", "cookies"):
        return event(http, target[0], secrets.token_hex(8), target[1])
    if mode == "calls":
        called = http.post("/gradio_api/call/list_runs", json={"data": []})
        if called.status_code != 200:
            return called.status_code
        with http.stream("GET", f"/gradio_api/call/list_runs/{called.json()['event_id']}") as s:
            for _ in s.iter_lines():
                pass
        return 200
    with http.stream("GET", "/gradio_api/dev/reload") as s:  # held open until the app closes it
        for _ in s.iter_lines():
            pass
        return s.status_code


def flood(url: str, mode: str, parallel: int, targets: list, stop, sent, refused) -> None:
    """``parallel`` threads sending ``mode`` requests without pause until ``stop`` is set,
    counting what they sent and what was refused (404/429) into the shared ``sent`` and
    ``refused``. Runs in its own process, as another client is another machine: in the
    measuring process its threads would hold the visitor's client behind the GIL."""

    def one_client(k: int) -> None:
        http = httpx.Client(base_url=url, timeout=120, headers=FLOODER)
        while not stop.is_set():
            try:
                code = flood_once(http, mode, targets[k % len(targets)])
            except httpx.HTTPError:
                code = 0
            with sent.get_lock():
                sent.value += 1
            with refused.get_lock():
                refused.value += code in (404, 429)
        http.close()

    threads = [threading.Thread(target=one_client, args=(k,)) for k in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def flooded_loads(url: str, mode: str, parallel: int, loads: int, targets: list) -> dict:
    spawn = multiprocessing.get_context("spawn")
    stop, sent, refused = spawn.Event(), spawn.Value("l", 0), spawn.Value("l", 0)
    flooder = spawn.Process(
        target=flood, args=(url, mode, parallel, targets, stop, sent, refused), daemon=True
    )
    flooder.start()
    time.sleep(5)  # let the flood build up
    for values in PARTS.values():
        values.clear()
    flooded = [page_load(url) for _ in range(loads)]
    stop.set()
    flooder.join(timeout=180)
    if flooder.is_alive():
        flooder.kill()
    return {
        "mode": mode,
        "page_load_p95_s": round(p95(flooded), 3),
        "page_load_median_s": round(statistics.median(flooded), 3),
        "page_p95_s": round(p95(PARTS["page"]), 3),
        "load_events_p95_s": round(p95(PARTS["load event"]), 3),
        "flood_parallel": parallel,
        "flood_requests_sent": sent.value,
        "flood_requests_refused": refused.value,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=100)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--mode", nargs="+", choices=MODES, default=list(MODES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, public_app(Path(tmp) / "data") as url:
        config = httpx.get(f"{url}/config", timeout=30).json()
        targets = [
            (d.get("id", i), next((t[0] for t in d["targets"] if t[1] == "tick"), None))
            for i, d in enumerate(config["dependencies"])
            if d.get("api_name") == "list_runs" or any(t[1] == "tick" for t in d["targets"])
        ]
        page_load(url)  # warm up
        idle = [page_load(url) for _ in range(args.loads)]
        results = [flooded_loads(url, m, args.parallel, args.loads, targets) for m in args.mode]

    print(f"{'':24}{'median s':>10}{'p95 s':>10}{'sent':>8}{'refused':>9}")
    print(f"{'idle page load':24}{statistics.median(idle):10.3f}{p95(idle):10.3f}")
    for r in results:
        print(
            f"{'under ' + r['mode'] + ' flood':24}{r['page_load_median_s']:10.3f}"
            f"{r['page_load_p95_s']:10.3f}{r['flood_requests_sent']:8}"
            f"{r['flood_requests_refused']:9}"
        )
    summary = {
        "parallel": args.parallel,
        "loads": args.loads,
        "idle_page_load_median_s": round(statistics.median(idle), 3),
        "idle_page_load_p95_s": round(p95(idle), 3),
        "worst_page_load_p95_s": max((r["page_load_p95_s"] for r in results), default=None),
        "modes": {r.pop("mode"): r for r in results},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
