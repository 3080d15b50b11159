from storage.runs import RunInfo
from storage.schema import RunStatus
from ui.runs import progress as run_progress
from ui.runs.state import RunView, Series

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


def line(message: str) -> str:
    return f"2026-11-26 10:00:00 INFO    {message}"


def test_the_phase_follows_the_workers_log_lines():
    lines = [line("Loading model default"), line("40 training prompts, 8 held-out prompts")]
    assert run_progress.phase(RUN, lines[:1]) == "Loading the model"
    assert run_progress.phase(RUN, lines).startswith("Generating the first")
    lines.append(line("Evaluating 8 held-out prompts at step 0"))
    assert run_progress.phase(RUN, lines) == "Evaluating on held-out prompts"
    lines.append(line("Held-out at step 0: accuracy 0.300, format 0.900"))
    assert run_progress.phase(RUN, lines) == run_progress.TRAINING
    lines.append(line("engine.trainers.callbacks: Saving a checkpoint at step 5"))
    assert run_progress.phase(RUN, lines) == run_progress.SAVING == "Saving checkpoint"
    lines.append(line("engine.trainers.callbacks: Checkpoint saved at step 5; training on"))
    assert run_progress.phase(RUN, lines) == run_progress.TRAINING
    assert run_progress.phases_walked(RUN, lines)[-3:] == [
        run_progress.TRAINING,
        run_progress.SAVING,
        run_progress.TRAINING,
    ]
    assert run_progress.phase(RUN, lines, stop_asked=True) == run_progress.STOPPING
    assert run_progress.phase(
        RUN.model_copy(update={"status": RunStatus.QUEUED}), lines
    ).startswith("Queued")
    assert run_progress.phase(RUN.model_copy(update={"status": RunStatus.COMPLETED}), lines) == ""


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
        "last attempt took 2:05",
        "held-out accuracy 30.0% → 40.0% (best 45.0% at step 5)",
        "reward 0.2 → 0.9",
    ]
    assert "run-summary" in run_progress.progress_html(done, RunView(series=series))
