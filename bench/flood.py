"""Page-load time while one client floods a public app with cheap events.

Starts ``python app.py`` as a public app (``STUDIO_PUBLIC=1``) on a fresh data dir, measures a
fresh visitor's page load (``GET /``, ``GET /config`` and the page's load event through the
queue, as a browser opening the page does) idle, then again while one client sends
``--parallel`` (100) events at once without pause, each on a new session (the runs list's
``tick`` poll and ``/list_runs``), keeping no cookie. Prints a table, then one JSON line:
``{"page_load_p95_s": ..., "idle_page_load_s": ..., ...}``.

    python bench/flood.py [--parallel 100] [--loads 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def public_app(data_dir: Path):
    port = free_port()
    env = {**os.environ, "STUDIO_PUBLIC": "1", "STUDIO_DATA_DIR": str(data_dir)}
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


def page_load(url: str) -> float:
    """Seconds a fresh visitor takes to load the page and run its load event (the two parts
    are kept in ``PARTS``)."""
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=120) as http:
        http.get("/").raise_for_status()
        config = http.get("/config").json()
        page = time.perf_counter()
        for i, dep in enumerate(config["dependencies"]):
            load = next((t for t in dep["targets"] if t[1] == "load"), None)
            if load is not None:
                event(http, dep.get("id", i), secrets.token_hex(6), load[0])
    done = time.perf_counter()
    PARTS["page"].append(page - started)
    PARTS["load event"].append(done - page)
    return done - started


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=100)
    parser.add_argument("--loads", type=int, default=20)
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

        stop = threading.Event()
        sent, refused = [0], [0]
        lock = threading.Lock()

        def flood(k: int) -> None:
            http = httpx.Client(base_url=url, timeout=120)  # keeps no cookie between events
            while not stop.is_set():
                http.cookies.clear()
                fn_index, trigger = targets[k % len(targets)]
                try:
                    code = event(http, fn_index, secrets.token_hex(8), trigger)
                except httpx.HTTPError:
                    code = 0
                with lock:
                    sent[0] += 1
                    refused[0] += code == 429
            http.close()

        threads = [threading.Thread(target=flood, args=(k,)) for k in range(args.parallel)]
        for thread in threads:
            thread.start()
        time.sleep(5)  # let the flood build up
        for values in PARTS.values():
            values.clear()
        flooded = [page_load(url) for _ in range(args.loads)]
        stop.set()
        for thread in threads:
            thread.join(timeout=120)

    print(f"{'':24}{'median s':>10}{'p95 s':>10}")
    for name, values in (("idle page load", idle), ("page load under flood", flooded)):
        print(f"{name:24}{statistics.median(values):10.3f}{p95(values):10.3f}")
    for name, values in PARTS.items():
        print(f"{'  ' + name + ' (flood)':24}{statistics.median(values):10.3f}{p95(values):10.3f}")
    print(f"flood: {sent[0]} events sent by {args.parallel} threads, {refused[0]} refused (429)")
    result = {
        "page_load_p95_s": round(p95(flooded), 3),
        "page_load_median_s": round(statistics.median(flooded), 3),
        "idle_page_load_s": round(statistics.median(idle), 3),
        "idle_page_load_p95_s": round(p95(idle), 3),
        "flood_parallel": args.parallel,
        "flood_events_sent": sent[0],
        "flood_events_refused": refused[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
