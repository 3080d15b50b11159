"""Runs: create/read/update/delete, status transitions, heartbeats and the UI's poll queries."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from storage.progress import latest_steps, run_progress
from storage.records.logs import append_logs, logs_since
from storage.records.metrics import MetricWriter, metrics_since
from storage.records.samples import add_samples, sample_steps
from storage.runs import (
    InvalidTransitionError,
    RunNotFoundError,
    create_run,
    delete_run,
    get_run,
    heartbeat,
    list_runs,
    next_queued,
    set_status,
    truncate_run,
    update_run,
)
from storage.sqlite.schema import RunStatus


def test_create_and_get(db, tmp_path):
    before = time.time()
    run = create_run(
        db,
        algorithm="grpo",
        config={"lr": 2e-5, "steps": 10},
        name="first",
        total_steps=10,
        output_dir=tmp_path / "out",
    )
    assert run.id.startswith("grpo-") and len(run.id) == len("grpo-") + 8
    assert run.name == "first"
    assert run.status == RunStatus.QUEUED
    assert run.config == {"lr": 2e-5, "steps": 10}
    assert run.created_at >= before
    assert (run.started_at, run.ended_at, run.pid, run.heartbeat_at) == (None, None, None, None)
    assert (run.last_step, run.total_steps, run.attempt) == (0, 10, 1)
    assert run.output_dir == str(tmp_path / "out")
    assert get_run(db, run.id) == run
    assert get_run(db, "missing") is None


def test_config_may_be_a_dataclass_or_json_text(db):
    @dataclass
    class Config:
        lr: float = 1e-5

    assert create_run(db, algorithm="rloo", config=Config()).config == {"lr": 1e-5}
    assert create_run(db, algorithm="ppo", config='{"a": [1, 2]}').config == {"a": [1, 2]}


def test_bad_create_arguments_name_the_field(db):
    with pytest.raises(ValueError, match="run_id"):
        create_run(db, algorithm="grpo", config={}, run_id="../escape")
    with pytest.raises(ValueError, match="algorithm"):
        create_run(db, algorithm="", config={})
    with pytest.raises(ValueError, match="config: must be a JSON object"):
        create_run(db, algorithm="grpo", config="[1]")
    with pytest.raises(TypeError, match="config"):
        create_run(db, algorithm="grpo", config=42)
    with pytest.raises(ValueError, match="status"):
        create_run(db, algorithm="grpo", config={}, status="completed")
    with pytest.raises(ValueError, match="total_steps"):
        create_run(db, algorithm="grpo", config={}, total_steps=-1)
    create_run(db, algorithm="grpo", config={}, run_id="grpo-same")
    with pytest.raises(ValueError, match="run_id: a run with id 'grpo-same' already exists"):
        create_run(db, algorithm="grpo", config={}, run_id="grpo-same")


def test_list_newest_first_and_by_status(db):
    a = create_run(db, algorithm="grpo", config={}, run_id="a")
    b = create_run(db, algorithm="grpo", config={}, run_id="b")
    c = create_run(db, algorithm="grpo", config={}, run_id="c")
    set_status(db, b.id, "running")
    assert [r.id for r in list_runs(db)] == [c.id, b.id, a.id]
    assert [r.id for r in list_runs(db, statuses=[RunStatus.RUNNING])] == [b.id]
    assert [r.id for r in list_runs(db, statuses=["queued"])] == [c.id, a.id]
    with pytest.raises(ValueError, match="statuses: 'done' is not a run status"):
        list_runs(db, statuses=["done"])


def test_next_queued_is_the_oldest_queued(db):
    assert next_queued(db) is None
    first = create_run(db, algorithm="grpo", config={}, run_id="q1")
    create_run(db, algorithm="grpo", config={}, run_id="q2")
    assert next_queued(db).id == first.id
    set_status(db, first.id, RunStatus.RUNNING)
    assert next_queued(db).id == "q2"


def test_update_run_fields(db):
    run = create_run(db, algorithm="grpo", config={"a": 1})
    updated = update_run(db, run.id, name="renamed", pid=4321, config={"a": 2}, total_steps=5)
    assert (updated.name, updated.pid, updated.config, updated.total_steps) == (
        "renamed",
        4321,
        {"a": 2},
        5,
    )
    assert get_run(db, run.id) == updated
    with pytest.raises(ValueError, match="created_at: not a run field that can be updated"):
        update_run(db, run.id, created_at=0.0)
    with pytest.raises(TypeError, match="pid: expected an integer"):
        update_run(db, run.id, pid="12")
    with pytest.raises(RunNotFoundError, match="nope"):
        update_run(db, "nope", name="x")


def test_running_then_completed_stamps_times(db):
    run = create_run(db, algorithm="grpo", config={})
    running = set_status(db, run.id, RunStatus.RUNNING, pid=99)
    assert running.status == RunStatus.RUNNING and running.pid == 99
    assert running.started_at is not None and running.heartbeat_at == running.started_at
    assert running.ended_at is None
    done = set_status(db, run.id, "completed")
    assert done.status == RunStatus.COMPLETED and done.is_terminal
    assert done.ended_at >= done.started_at
    assert done.attempt == 1


def test_failure_keeps_message_and_traceback(db):
    run = create_run(db, algorithm="grpo", config={})
    set_status(db, run.id, RunStatus.RUNNING)
    failed = set_status(
        db,
        run.id,
        RunStatus.FAILED,
        error="ValueError: boom",
        traceback="Traceback ...\nValueError: boom",
    )
    assert failed.error_message == "ValueError: boom"
    assert failed.error_traceback.endswith("ValueError: boom")


def test_resume_counts_an_attempt_and_clears_the_old_error(db):
    run = create_run(db, algorithm="grpo", config={})
    set_status(db, run.id, RunStatus.RUNNING)
    set_status(db, run.id, RunStatus.INTERRUPTED, error="worker gone")
    queued = update_run(db, run.id, status=RunStatus.QUEUED)
    assert (queued.attempt, queued.error_message, queued.ended_at) == (2, None, None)
    running = set_status(db, run.id, RunStatus.RUNNING)
    assert running.attempt == 2  # queued -> running is the same attempt
    set_status(db, run.id, RunStatus.STOPPED)
    assert set_status(db, run.id, RunStatus.RUNNING).attempt == 3


def test_a_resume_keeps_the_time_of_every_earlier_attempt(db):
    run = create_run(db, algorithm="grpo", config={}, status=RunStatus.RUNNING)
    update_run(db, run.id, started_at=100.0)
    set_status(db, run.id, RunStatus.STOPPED, ended_at=845.0)  # 12:25
    queued = update_run(db, run.id, status=RunStatus.QUEUED)
    assert queued.earlier_attempts_s == 745.0
    set_status(db, run.id, RunStatus.RUNNING, started_at=2000.0)
    assert get_run(db, run.id).earlier_attempts_s == 745.0  # queued -> running: same attempt
    set_status(db, run.id, RunStatus.COMPLETED, ended_at=2076.0)  # 1:16
    again = set_status(db, run.id, RunStatus.RUNNING)  # train further
    assert again.earlier_attempts_s == 745.0 + 76.0
    with pytest.raises(TypeError, match="earlier_attempts_s: expected a number"):
        update_run(db, run.id, earlier_attempts_s="long")


def test_same_status_again_is_allowed(db):
    run = create_run(db, algorithm="grpo", config={})
    first = set_status(db, run.id, RunStatus.RUNNING, pid=1)
    again = set_status(db, run.id, RunStatus.RUNNING, pid=2)
    assert again.pid == 2 and again.started_at == first.started_at


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        (["running", "completed"], "failed"),
        (["running", "completed"], "interrupted"),
        ([], "completed"),
        ([], "interrupted"),
        (["running", "failed"], "stopped"),
        (["running"], "queued"),
    ],
)
def test_disallowed_transitions_are_refused(db, path, bad):
    run = create_run(db, algorithm="grpo", config={})
    for status in path:
        set_status(db, run.id, status)
    before = get_run(db, run.id)
    with pytest.raises(InvalidTransitionError, match=f"cannot go from {before.status} to {bad}"):
        set_status(db, run.id, bad)
    assert get_run(db, run.id) == before


def test_interrupted_run_may_still_report_how_it_ended(db):
    run = create_run(db, algorithm="grpo", config={})
    set_status(db, run.id, RunStatus.RUNNING)
    set_status(db, run.id, RunStatus.INTERRUPTED)
    assert set_status(db, run.id, RunStatus.COMPLETED).status == RunStatus.COMPLETED


def test_unknown_status_is_refused(db):
    run = create_run(db, algorithm="grpo", config={})
    with pytest.raises(ValueError, match="status: 'paused' is not a run status; allowed: queued"):
        set_status(db, run.id, "paused")


def test_status_prints_as_its_value():
    assert f"{RunStatus.RUNNING}" == "running"
    assert str(RunStatus.FAILED) == "failed"
    assert RunStatus.QUEUED == "queued"


def test_heartbeat_and_latest_steps(db):
    a = create_run(db, algorithm="grpo", config={}, run_id="a")
    b = create_run(db, algorithm="rloo", config={}, run_id="b")
    assert latest_steps(db) == {"a": 0, "b": 0}
    heartbeat(db, a.id, 7)
    heartbeat(db, a.id, 5)  # never goes back
    heartbeat(db, b.id)
    assert latest_steps(db) == {"a": 7, "b": 0}
    assert get_run(db, b.id).heartbeat_at is not None
    with pytest.raises(RunNotFoundError):
        heartbeat(db, "missing", 1)


def test_metric_flushes_move_latest_steps_and_progress(db):
    run = create_run(db, algorithm="grpo", config={})
    progress = run_progress(db)[run.id]
    assert (progress.status, progress.last_step, progress.metric_cursor) == (
        RunStatus.QUEUED,
        0,
        0,
    )
    with MetricWriter(db, run.id) as writer:
        writer.log(3, {"reward/total": 0.5, "loss/policy": 0.1})
    assert latest_steps(db) == {run.id: 3}
    rows, cursor = metrics_since(db, run.id)
    progress = run_progress(db)[run.id]
    assert progress.last_step == 3 and progress.metric_cursor == cursor == rows[-1].id
    assert progress.heartbeat_at is not None


def fill(db, run_id: str, steps: range) -> None:
    with MetricWriter(db, run_id) as writer:
        for step in steps:
            writer.log(step, {"reward/total": step / 10})
    for step in steps:
        add_samples(db, run_id, step, [{"prompt": "p", "completion": f"c{step}"}])
    append_logs(db, run_id, [(time.time(), "INFO", "line")])


def test_delete_removes_the_run_and_everything_of_it_only(db):
    gone = create_run(db, algorithm="grpo", config={}, run_id="gone")
    kept = create_run(db, algorithm="grpo", config={}, run_id="kept")
    fill(db, gone.id, range(1, 4))
    fill(db, kept.id, range(1, 3))
    assert delete_run(db, gone.id) is True
    assert get_run(db, gone.id) is None
    assert metrics_since(db, gone.id) == ([], 0)
    assert sample_steps(db, gone.id) == []
    assert logs_since(db, gone.id) == ([], 0)
    assert len(metrics_since(db, kept.id)[0]) == 2
    assert sample_steps(db, kept.id) == [1, 2]
    assert len(logs_since(db, kept.id)[0]) == 1
    assert latest_steps(db) == {"kept": 2}
    assert delete_run(db, gone.id) is False


def test_truncate_drops_steps_after_a_checkpoint(db):
    run = create_run(db, algorithm="grpo", config={})
    fill(db, run.id, range(1, 8))
    assert truncate_run(db, run.id, after_step=4) == 3 + 3  # metrics + samples of steps 5-7
    assert [p.step for p in metrics_since(db, run.id)[0]] == [1, 2, 3, 4]
    assert sample_steps(db, run.id) == [1, 2, 3, 4]
    assert latest_steps(db) == {run.id: 4}
    with pytest.raises(RunNotFoundError):
        truncate_run(db, "missing", 1)
