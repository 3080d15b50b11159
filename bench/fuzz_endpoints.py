"""Fuzz every named endpoint of a public app with hostile inputs (issue 40: 10,000 cases, 0
uncaught).

Starts ``python app.py`` as a public app on a fresh data dir (one worker slot, held by a seeded
run, so a config that passes every check only queues), reads the named endpoints and their
parameters from ``/gradio_api/info``, and sends ``--cases`` calls through the queue as the page
does (``/gradio_api/queue/join``; the right number of arguments, each a hostile or a plausible
value for its parameter, drawn from ``--seed``). Each answer is one of:

- ``ok``: a result;
- ``refused``: an error message (a field error, a cap, a missing run);
- ``uncaught``: what issue 40 counts: ``error: null`` (an exception Gradio hides), the generic
  "this input could not be handled" of :func:`ui.api.errors.as_gradio_error` (a check that
  missed a shape of input), a server error, or a stream that ended without an answer.

Prints a table per endpoint and one JSON line ``{"cases": ..., "uncaught": ..., ...}``; the
first uncaught cases are printed with their inputs. The test suite runs a small sample of the
same cases (``tests/ui/test_fuzz_sample.py``).

    python bench/fuzz_endpoints.py [--cases 10000] [--seed 40]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fuzz_values import hostile, plausible  # noqa: E402

UNHANDLED = "could not be handled"
#: The run that holds the fuzzed app's one worker slot, so fuzzed runs only queue.
BUSY_RUN = "busy-slot"


def hold_the_worker_slot(data_dir: Path, pid: int) -> None:
    """Record :data:`BUSY_RUN` as running in process ``pid`` (a sleeper), owned by the local
    user: the app's one worker slot is taken, and no visitor sees or stops the run."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    data_dir.mkdir(parents=True, exist_ok=True)
    with Database(db_path(data_dir)) as db:
        run_store.create_run(
            db, run_id=BUSY_RUN, algorithm="grpo", config={}, status=RunStatus.RUNNING
        )
        run_store.update_run(db, BUSY_RUN, pid=pid)


@contextlib.contextmanager
def fuzzable_app(data_dir: Path) -> Iterator[str]:
    """A public app (``bench/flood.py``'s) whose one worker slot a sleeper holds; its URL."""
    from bench.flood import public_app

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(86400)"])
    try:
        hold_the_worker_slot(data_dir, sleeper.pid)
        with public_app(data_dir, {"STUDIO_MAX_CONCURRENT_RUNS": "1"}) as url:
            yield url
    finally:
        sleeper.kill()
        sleeper.wait()


def endpoints(http: httpx.Client) -> dict[str, tuple[int, list[dict]]]:
    """``{api name: (fn index, parameters)}`` of the app's named endpoints."""
    info = http.get("/gradio_api/info").json()["named_endpoints"]
    config = http.get("/config").json()
    index = {d.get("api_name"): d.get("id", i) for i, d in enumerate(config["dependencies"])}
    return {
        name.lstrip("/"): (index[name.lstrip("/")], ep["parameters"]) for name, ep in info.items()
    }


def cases(
    seed: int, n: int, named: dict[str, tuple[int, list[dict]]]
) -> Iterator[tuple[str, list]]:
    """``n`` deterministic ``(api name, arguments)`` pairs, endpoints taken in turn."""
    rng = random.Random(seed)
    names = sorted(named)
    for i in range(n):
        name = names[i % len(names)]
        args = []
        for param in named[name][1]:
            kind = param["python_type"]["type"]
            pick = plausible if rng.random() < 0.4 else hostile
            args.append(pick(rng, param["parameter_name"], kind))
        yield name, args


def call(http: httpx.Client, fn_index: int, args: list, session: str) -> tuple[str, str]:
    """``(outcome, detail)`` of one queue call (429s are waited out and sent again)."""
    body = {"data": args, "event_data": None, "fn_index": fn_index, "trigger_id": None}
    # ASCII JSON: a lone surrogate travels as the escape a browser's JSON.stringify writes.
    raw = json.dumps({**body, "session_hash": session}, ensure_ascii=True)
    headers = {"content-type": "application/json"}
    for _ in range(30):
        joined = http.post("/gradio_api/queue/join", content=raw, headers=headers)
        if joined.status_code != 429:
            break
        time.sleep(1.0)
    if joined.status_code >= 500:
        return "uncaught", f"HTTP {joined.status_code} on join"
    if joined.status_code != 200:
        return "refused", f"HTTP {joined.status_code}: {joined.text[:120]}"
    with http.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as s:
        for line in s.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") != "process_completed":
                continue
            if message.get("success"):
                return "ok", ""
            error = (message.get("output") or {}).get("error")
            if error is None or UNHANDLED in error:
                return "uncaught", str(error)
            return "refused", error[:120]
    return "uncaught", "the stream ended without an answer"


def fuzz(url: str, n: int, seed: int) -> dict[str, Any]:
    """Run ``n`` cases against the app at ``url``; counts per endpoint and the uncaught ones."""
    http = httpx.Client(base_url=url.rstrip("/"), timeout=120)
    named = endpoints(http)
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    uncaught = []
    session = f"fuzz{seed}"  # one session, as one page: a new one costs a share of the limits
    for name, args in cases(seed, n, named):
        outcome, detail = call(http, named[name][0], args, session)
        counts[name][outcome] += 1
        if outcome == "uncaught":
            uncaught.append({"endpoint": name, "args": repr(args)[:300], "detail": detail})
    return {"counts": {k: dict(v) for k, v in counts.items()}, "uncaught": uncaught}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=40)
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, fuzzable_app(Path(tmp) / "data") as url:
        result = fuzz(url, args.cases, args.seed)
    print(f"{'endpoint':<16} {'ok':>6} {'refused':>8} {'uncaught':>9}")
    for name, c in sorted(result["counts"].items()):
        print(f"{name:<16} {c.get('ok', 0):>6} {c.get('refused', 0):>8} {c.get('uncaught', 0):>9}")
    for case in result["uncaught"][:20]:
        print("UNCAUGHT", json.dumps(case))
    summary = {
        "cases": args.cases,
        "seed": args.seed,
        "uncaught": len(result["uncaught"]),
        "minutes": round((time.monotonic() - started) / 60, 1),
    }
    print(json.dumps(summary))
    return 0 if not result["uncaught"] else 1


if __name__ == "__main__":
    sys.exit(main())
