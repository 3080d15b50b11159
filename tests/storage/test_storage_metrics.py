"""Metrics: the batching writer and cursor reads."""

from __future__ import annotations

import logging
import math
import threading
import time

import numpy as np
import pytest

from storage.records.metrics import (
    MetricPoint,
    MetricWriter,
    metric_names,
    metric_series,
    metrics_since,
)
from storage.runs import RunNotFoundError, create_run, delete_run
from storage.sqlite.db import Database, DatabaseLockedError


@pytest.fixture
def run_id(db):
    return create_run(db, algorithm="grpo", config={}, run_id="grpo-m").id


def stored(db, run_id) -> list[tuple[int, str, float | None]]:
    rows, _ = metrics_since(db, run_id)
    return [(p.step, p.name, p.value) for p in rows]


def test_rows_wait_until_flush_every_is_reached(db, run_id):
    writer = MetricWriter(db, run_id, flush_every=4, flush_seconds=60)
    writer.log(1, {"a": 1.0, "b": 2.0})
    assert writer.pending == 2 and stored(db, run_id) == []
    writer.log(2, {"a": 3.0, "b": 4.0})
    assert writer.pending == 0
    assert stored(db, run_id) == [(1, "a", 1.0), (1, "b", 2.0), (2, "a", 3.0), (2, "b", 4.0)]
    writer.close()


def test_a_quiet_writer_still_flushes_after_flush_seconds(db, run_id):
    writer = MetricWriter(db, run_id, flush_every=1000, flush_seconds=0.05)
    writer.log(1, {"a": 1.0})
    deadline = time.monotonic() + 10
    while writer.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stored(db, run_id) == [(1, "a", 1.0)]
    writer.close()


def test_close_writes_what_is_pending_and_ends_the_writer(db, run_id):
    writer = MetricWriter(db, run_id, flush_every=1000, flush_seconds=60)
    writer.log(5, {"loss/policy": 0.25})
    writer.close()
    assert stored(db, run_id) == [(5, "loss/policy", 0.25)]
    assert writer.rows_written == 1
    with pytest.raises(RuntimeError, match="closed"):
        writer.log(6, {"loss/policy": 0.5})


def test_non_finite_values_are_stored_as_null(db, run_id):
    with MetricWriter(db, run_id) as writer:
        writer.log(1, {"nan": math.nan, "inf": math.inf, "none": None, "ok": 1})
    assert stored(db, run_id) == [
        (1, "nan", None),
        (1, "inf", None),
        (1, "none", None),
        (1, "ok", 1.0),
    ]


def test_numpy_and_bool_values_become_floats(db, run_id):
    with MetricWriter(db, run_id) as writer:
        writer.log(np.int64(2), {"np": np.float32(0.5), "flag": True})
    assert stored(db, run_id) == [(2, "np", 0.5), (2, "flag", 1.0)]


def test_bad_input_names_the_field(db, run_id):
    writer = MetricWriter(db, run_id)
    with pytest.raises(TypeError, match="metric 'loss': expected a number, got the str 'high'"):
        writer.log(1, {"loss": "high"})
    with pytest.raises(ValueError, match="step: must be >= 0"):
        writer.log(-1, {"loss": 1.0})
    with pytest.raises(TypeError, match="step: expected an integer"):
        writer.log(1.5, {"loss": 1.0})
    with pytest.raises(ValueError, match="metric name"):
        writer.log(1, {"": 1.0})
    with pytest.raises(TypeError, match="values"):
        writer.log(1, [("loss", 1.0)])
    assert writer.pending == 0  # a rejected call queues nothing
    writer.close()
    with pytest.raises(RunNotFoundError):
        MetricWriter(db, "no-such-run")
    with pytest.raises(ValueError, match="flush_every"):
        MetricWriter(db, run_id, flush_every=0)


def test_cursor_reads_return_each_row_once_in_order(db, run_id):
    writer = MetricWriter(db, run_id, flush_every=3)
    seen: list[MetricPoint] = []
    cursor = 0
    for step in range(1, 21):
        writer.log(step, {"a": step, "b": -step})
        rows, cursor = metrics_since(db, run_id, cursor, limit=4)  # pages smaller than writes
        seen += rows
    writer.close()
    while True:
        rows, cursor = metrics_since(db, run_id, cursor, limit=4)
        if not rows:
            break
        seen += rows
    assert [(p.step, p.name, p.value) for p in seen] == [
        (s, n, v) for s in range(1, 21) for n, v in (("a", s), ("b", -s))
    ]
    ids = [p.id for p in seen]
    assert ids == sorted(set(ids))
    assert cursor == ids[-1]
    assert metrics_since(db, run_id, cursor) == ([], cursor)


def test_cursor_reads_filter_by_name_and_run(db, run_id):
    other = create_run(db, algorithm="rloo", config={}, run_id="rloo-m").id
    with MetricWriter(db, run_id) as mine, MetricWriter(db, other) as theirs:
        for step in (1, 2):
            mine.log(step, {"reward/total": step, "loss/policy": 10 * step, "x": 0})
            theirs.log(step, {"reward/total": -step})
    rows, _ = metrics_since(db, run_id, names=["reward/total", "loss/policy"])
    assert [(p.step, p.name, p.value) for p in rows] == [
        (1, "reward/total", 1.0),
        (1, "loss/policy", 10.0),
        (2, "reward/total", 2.0),
        (2, "loss/policy", 20.0),
    ]
    assert [p.value for p in metrics_since(db, other, names="reward/total")[0]] == [-1.0, -2.0]


def test_metric_names_and_series(db, run_id):
    other = create_run(db, algorithm="rloo", config={}, run_id="rloo-s").id
    with MetricWriter(db, run_id) as mine, MetricWriter(db, other) as theirs:
        for step in (2, 1, 3):  # series come back by step whatever the write order
            mine.log(step, {"reward/total": step / 10, "loss/policy": 1.0})
        theirs.log(1, {"loss/policy": 2.0})
    assert metric_names(db, run_id) == ["loss/policy", "reward/total"]
    assert metric_names(db, "missing") == []
    series = metric_series(db, [run_id, other, "missing"], "reward/total")
    assert series[run_id].steps == [1, 2, 3]
    assert series[run_id].values == [0.1, 0.2, 0.3]
    assert series[other].steps == [] and series["missing"].values == []


def test_a_batch_the_database_refuses_stays_pending_then_lands_once(
    data_dir, caplog, hold_write_lock
):
    db = Database(data_dir / "studio.db", busy_timeout_s=0.05, lock_retries=0)
    run_id = create_run(db, algorithm="grpo", config={}).id
    writer = MetricWriter(db, run_id, flush_every=1000, flush_seconds=60)
    writer.log(1, {"a": 1.0, "b": 2.0})
    holder = hold_write_lock(db.path, 1.0)
    try:
        with pytest.raises(DatabaseLockedError):
            writer.flush()
        assert writer.pending == 2
    finally:
        holder.join()
    assert "Could not write 2 metric rows" in caplog.text
    writer.log(2, {"a": 3.0})
    writer.close()
    assert stored(db, run_id) == [(1, "a", 1.0), (1, "b", 2.0), (2, "a", 3.0)]
    db.close()


def test_rows_beyond_max_pending_are_dropped_loudly(db, run_id, caplog):
    caplog.set_level(logging.ERROR, logger="storage.records.metrics")
    writer = MetricWriter(db, run_id, flush_every=2, max_pending=2, flush_seconds=60)
    writer._pending.extend(
        [{"run_id": run_id, "step": 0, "name": "old", "value": 0.0, "time": 0.0}] * 2
    )  # as if two earlier writes had failed
    writer.log(1, {"a": 1.0})
    assert writer.rows_dropped == 1
    assert "Dropped the 1 oldest pending metric rows" in caplog.text
    writer.close()
    assert stored(db, run_id) == [(0, "old", 0.0), (1, "a", 1.0)]


def test_writing_to_a_deleted_run_is_an_error_not_silence(db, run_id, caplog):
    writer = MetricWriter(db, run_id, flush_every=1000, flush_seconds=60)
    writer.log(1, {"a": 1.0})
    delete_run(db, run_id)
    with pytest.raises(RunNotFoundError):
        writer.flush()
    assert writer.rows_dropped == 1 and writer.pending == 0
    assert "Dropped 1 metric rows" in caplog.text
    writer.close()


def test_after_a_refused_write_log_does_not_block_and_the_timer_lands_the_rows(
    data_dir, caplog, hold_write_lock
):
    db = Database(data_dir / "studio.db", busy_timeout_s=0.05, lock_retries=0)
    run_id = create_run(db, algorithm="grpo", config={}).id
    writer = MetricWriter(db, run_id, flush_every=2, flush_seconds=0.05)
    holder = hold_write_lock(db.path, 1.0)
    writer.log(1, {"a": 1.0, "b": 2.0})  # full: tries at once, is refused, keeps the rows
    assert writer.pending == 2
    writer.log(2, {"a": 3.0, "b": 4.0})  # backing off: no second attempt from log()
    assert writer.pending == 4
    assert caplog.text.count("Could not write") == 1
    holder.join()
    deadline = time.monotonic() + 30
    while writer.pending and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stored(db, run_id) == [(1, "a", 1.0), (1, "b", 2.0), (2, "a", 3.0), (2, "b", 4.0)]
    writer.close()
    db.close()


def test_overflow_during_a_slow_write_loses_no_other_rows(data_dir, hold_write_lock):
    db = Database(data_dir / "studio.db", busy_timeout_s=10, lock_retries=0)
    run_id = create_run(db, algorithm="grpo", config={}).id
    writer = MetricWriter(db, run_id, flush_every=4, max_pending=4, flush_seconds=60)
    writer.log(1, {"a": 1.0, "b": 2.0})
    holder = hold_write_lock(db.path, 0.5)
    slow = threading.Thread(target=writer.flush)  # waits for the lock with step 1 in hand
    slow.start()
    while not writer._flush_lock.locked():
        time.sleep(0.001)
    time.sleep(0.05)
    # Six rows pending > max_pending: step 1 is dropped from the queue while being written.
    writer.log(2, {"a": 3.0, "b": 4.0, "c": 5.0, "d": 6.0})
    slow.join()
    holder.join()
    writer.close()
    assert stored(db, run_id) == [
        (1, "a", 1.0),
        (1, "b", 2.0),
        (2, "a", 3.0),
        (2, "b", 4.0),
        (2, "c", 5.0),
        (2, "d", 6.0),
    ]
    db.close()
