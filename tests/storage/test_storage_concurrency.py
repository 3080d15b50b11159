"""Several processes on one studio.db: two run writers and a polling reader, and a crashed writer.

The writers are real processes (as run workers are); the test process plays the dashboard,
polling ``metrics_since`` by cursor while they write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from metric_writer_process import SAMPLES, expected_metrics
from sqlalchemy import text

from storage.progress import latest_steps
from storage.records.metrics import metrics_since
from storage.records.samples import sample_steps, samples_at
from storage.runs import create_run, get_run
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WRITER = HERE / "metric_writer_process.py"


def start_writer(db_file: Path, run_id: str, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)])}
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(db_file), run_id, str(seconds)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    """The writer's step count; fails on a non-zero exit or any storage warning."""
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "locked" not in err.lower(), err
    assert "WARNING" not in err and "ERROR" not in err, err
    return json.loads(out.strip().splitlines()[-1])["steps"], err


def poll(db: Database, run_ids: list[str], cursors: dict, seen: dict, limit: int) -> int:
    """One dashboard tick: the cheap step query, then new rows of each run; returns rows got."""
    latest_steps(db)
    got = 0
    for rid in run_ids:
        rows, cursors[rid] = metrics_since(db, rid, cursors[rid], limit=limit)
        seen[rid] += rows
        got += len(rows)
    return got


def all_metrics(db: Database, run_id: str) -> list[tuple[int, str, float]]:
    """Every stored row of the run, paging by cursor (a fast writer outgrows one page)."""
    points, cursor = [], 0
    while True:
        rows, cursor = metrics_since(db, run_id, cursor, limit=10_000)
        if not rows:
            return [(p.step, p.name, p.value) for p in points]
        points += rows


def test_two_writers_and_a_polling_reader(data_dir):
    db_file = data_dir / "studio.db"
    db = Database(db_file)
    run_ids = [create_run(db, algorithm=a, config={}).id for a in ("grpo", "rloo")]
    writers = [start_writer(db_file, rid, seconds=3.0) for rid in run_ids]
    cursors = dict.fromkeys(run_ids, 0)
    seen: dict[str, list] = {rid: [] for rid in run_ids}
    polls_with_rows_while_writing = 0
    try:
        while any(w.poll() is None for w in writers):
            if poll(db, run_ids, cursors, seen, limit=500):
                polls_with_rows_while_writing += 1
        steps = [finish(w)[0] for w in writers]
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
    while poll(db, run_ids, cursors, seen, limit=500):  # drain what arrived since the last tick
        pass

    assert polls_with_rows_while_writing >= 3  # the reads really interleaved with the writes
    for rid, n in zip(run_ids, steps, strict=True):
        assert n >= 10
        points = seen[rid]
        assert [(p.step, p.name, p.value) for p in points] == expected_metrics(n)
        ids = [p.id for p in points]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        assert sample_steps(db, rid) == list(range(1, n + 1))
        assert len(samples_at(db, rid, n)) == SAMPLES
        run = get_run(db, rid)
        assert run.status == RunStatus.COMPLETED and run.last_step == n
    assert latest_steps(db) == dict(zip(run_ids, steps, strict=True))
    db.close()


def test_a_killed_writer_corrupts_nothing(data_dir):
    db_file = data_dir / "studio.db"
    db = Database(db_file)
    doomed = create_run(db, algorithm="grpo", config={}).id
    survivor = create_run(db, algorithm="rloo", config={}).id
    victim = start_writer(db_file, doomed, seconds=120.0)
    other = start_writer(db_file, survivor, seconds=3.0)
    try:
        deadline = time.monotonic() + 60
        while latest_steps(db)[doomed] < 30 and time.monotonic() < deadline:
            time.sleep(0.01)
        # The last step whose metrics are committed (fewer than 30 only on a badly overloaded
        # machine). Not ``last_step``: the stand-in's heartbeat may report a step whose
        # metrics are still in the writer's batch when the kill lands.
        committed = all_metrics(db, doomed)[-1][0]
        victim.send_signal(signal.SIGKILL)  # mid-stream, likely inside a transaction
        victim.wait(timeout=30)
        survivor_steps, _ = finish(other)
    finally:
        for proc in (victim, other):
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    assert db.read(lambda s: s.execute(text("PRAGMA integrity_check")).scalar()) == "ok"
    assert all_metrics(db, survivor) == expected_metrics(survivor_steps)
    # The killed run keeps whole committed batches: every step it has is complete.
    rows = all_metrics(db, doomed)
    last = rows[-1][0]
    assert last >= committed > 0
    assert rows == expected_metrics(last)
    assert get_run(db, doomed).status == RunStatus.RUNNING  # for the launcher's scan to resolve
    # The file is still writable by everyone.
    create_run(db, algorithm="grpo", config={})
    db.close()


def test_many_processes_opening_a_fresh_file_at_once(data_dir):
    db_file = data_dir / "fresh.db"
    code = "import sys; from storage.sqlite.db import Database; Database(sys.argv[1]).close()"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(db_file)],
            cwd=REPO,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    with Database(db_file) as db:
        assert (
            db.read(lambda s: s.execute(text("SELECT COUNT(*) FROM schema_version")).scalar()) == 1
        )
