import pytest

from storage import progress as progress_store
from storage import runs as run_store
from storage.paths import db_path
from storage.records import phases as phase_store
from storage.runs import RunInfo, create_run
from storage.sqlite.db import Database
from storage.sqlite.schema import RunPhase, RunStatus
from ui.plots.series import Series
from ui.runs import progress as run_progress
from ui.runs.state import RunView

RUN = RunInfo(
    id="grpo-aaaa1111",
    name="r",
    algorithm="grpo",
    status=RunStatus.RUNNING,
    config={},
    created_at=0.0,
    started_at=100.0,
    last_step=4,
    total_steps=10,
)


@pytest.fixture
def db(data_dir):
    with Database(db_path(data_dir)) as database:
        yield database


def test_the_phase_is_the_one_the_worker_recorded_last(db):
    """Phases are rows the worker writes (no log text is read): the progress query carries the
    newest, and the words under the bar follow it."""
    run = create_run(db, algorithm="grpo", config={})
    run_store.set_status(db, run.id, RunStatus.RUNNING)
    run = run_store.get_run(db, run.id)
    assert progress_store.run_progress(db)[run.id].phase is None
    text = run_progress.PHASE_TEXT
    assert run_progress.phase(run, None) == text[RunPhase.STARTING]  # before the worker's first
    older = run.model_copy(update={"last_step": 3})  # from before phases were recorded
    assert run_progress.phase(older, None) == text[RunPhase.TRAINING]
    for recorded, step in [
        (RunPhase.LOADING_MODEL, None),
        (RunPhase.EVALUATING, 0),
        (RunPhase.TRAINING, 1),
        (RunPhase.SAVING_CHECKPOINT, 5),
        (RunPhase.TRAINING, 5),
    ]:
        phase_store.record_phase(db, run.id, recorded, step)
        newest = progress_store.run_progress(db)[run.id].phase
        assert newest == recorded
        assert run_progress.phase(run, newest) == run_progress.PHASE_TEXT[recorded]
    assert run_progress.PHASE_TEXT[RunPhase.SAVING_CHECKPOINT] == "Saving checkpoint"
    stopping = run_progress.PHASE_TEXT[RunPhase.STOPPING]
    assert run_progress.phase(run, RunPhase.TRAINING, stop_asked=True) == stopping
    queued = run.model_copy(update={"status": RunStatus.QUEUED})
    assert run_progress.phase(queued, RunPhase.TRAINING).startswith("Queued")
    done = run.model_copy(update={"status": RunStatus.COMPLETED})
    assert run_progress.phase(done, RunPhase.TRAINING) == ""
    assert [p for p, _ in phase_store.phases(db, run.id)][-2:] == [
        RunPhase.SAVING_CHECKPOINT,
        RunPhase.TRAINING,
    ]


def test_a_resumed_run_is_resuming_until_its_new_worker_records_a_phase(db):
    """The phase of the attempt that stopped is not read (storage.progress), and until the new
    worker records its first the view says the run resumes, not that it trains."""
    run = create_run(db, algorithm="grpo", config={})
    run_store.set_status(db, run.id, RunStatus.RUNNING)
    run_store.heartbeat(db, run.id, 4)
    phase_store.record_phase(db, run.id, RunPhase.STOPPING, 4)
    run_store.set_status(db, run.id, RunStatus.STOPPED)
    run_store.set_status(db, run.id, RunStatus.RUNNING)  # Resume
    resumed = run_store.get_run(db, run.id)
    assert resumed.attempt == 2
    recorded = progress_store.run_progress(db)[run.id].phase
    assert recorded is None
    resuming = run_progress.PHASE_TEXT[RunPhase.RESUMING]
    assert run_progress.phase(resumed, recorded) == resuming
    phase_store.record_phase(db, run.id, RunPhase.LOADING_MODEL)
    loading = progress_store.run_progress(db)[run.id].phase
    assert run_progress.phase(resumed, loading) == run_progress.PHASE_TEXT[RunPhase.LOADING_MODEL]


def test_every_phase_has_words():
    assert set(run_progress.PHASE_TEXT) == set(RunPhase)


def test_the_bar_shows_step_n_of_m_and_an_eta_from_recent_step_times():
    view = RunView(series={"perf/step_time_s": Series([1, 2, 3, 4], [9.0, 2.0, 2.0, 2.0])})
    assert run_progress.eta_seconds(RUN, view.series) == (9 + 6) / 4 * 6
    text = run_progress.progress_html(RUN, view)
    assert "step 4 of 10" in text and "about 0:22 left" in text and "width:40.0%" in text


def test_an_ended_run_gets_a_summary_card():
    series = {
        "eval/accuracy": Series([0, 5, 10], [0.3, 0.45, 0.4]),
        "reward/total": Series([1, 10], [0.2, 0.9]),
    }
    done = RUN.model_copy(
        update={"status": RunStatus.COMPLETED, "last_step": 10, "ended_at": 225.0}
    )
    lines = run_progress.summary_lines(done, series)
    assert lines == [
        "completed at step 10 of 10",
        "took 2:05",
        "held-out accuracy 30.0% → 40.0% (best 45.0% at step 5)",
        "reward 0.2 → 0.9",
    ]
    assert "run-summary" in run_progress.progress_html(done, RunView(series=series))


def test_a_resumed_runs_duration_counts_every_attempt():
    resumed = RUN.model_copy(
        update={
            "status": RunStatus.COMPLETED,
            "attempt": 2,
            "earlier_attempts_s": 745.0,  # 12:25 before the resume
            "started_at": 100.0,
            "ended_at": 176.0,  # 1:16 after it
        }
    )
    assert run_progress.duration_text(resumed) == "13:41 over 2 attempts (last 1:16)"
    assert "took 13:41 over 2 attempts (last 1:16)" in run_progress.summary_lines(resumed, {})
    assert run_progress.summary_line(resumed, None).endswith("13:41")
    assert run_progress.duration_text(RUN.model_copy(update={"started_at": None})) == ""
