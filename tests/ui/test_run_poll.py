import pytest

from storage import runs as run_store
from storage.paths import db_path
from storage.records import logs as log_store
from storage.records import phases as phase_store
from storage.records import samples as sample_store
from storage.records.metrics import MetricWriter
from storage.sqlite.db import Database
from storage.sqlite.schema import RunPhase, RunStatus
from ui.plots.panels import PANELS
from ui.runs.poll import RunsUpdate, poll, runs_table
from ui.runs.state import RunView


@pytest.fixture
def db(data_dir):
    database = Database(db_path(data_dir))
    yield database
    database.close()


def make_run(db, run_id="grpo-aaaa1111", steps=3):
    run_store.create_run(
        db,
        run_id=run_id,
        algorithm="grpo",
        config={"training": {"steps": steps}},
        total_steps=steps,
        status=RunStatus.RUNNING,
    )
    return run_id


def log_step(db, run_id, step, values):
    with MetricWriter(db, run_id) as writer:
        writer.log(step, values)


def test_first_poll_draws_everything_then_quiet_ticks_draw_nothing(db):
    rid = make_run(db)
    view = RunView()
    first = poll(db, view, rid)
    assert first.runs_table[0][:4] == [rid, rid, "running", "0/3"]
    assert set(first.figures) >= {"reward", "loss", "signal"}
    assert "running" in first.status_md
    quiet = poll(db, view, rid)
    assert quiet.empty


def test_new_points_arrive_once_and_redraw_only_their_panels(db):
    rid = make_run(db)
    view = RunView()
    poll(db, view, rid)
    log_step(db, rid, 1, {"reward/total": 0.5, "rewards/format": 1.0})
    update = poll(db, view, rid)
    assert set(update.figures) == {"reward"}
    assert view.series["reward/total"].steps == [1]
    assert update.runs_table is not None  # the step moved: 1/3 in the list
    assert update.runs_table[0][3] == "1/3"
    log_step(db, rid, 2, {"loss/policy": 0.0})
    update = poll(db, view, rid)
    assert set(update.figures) == {"loss"}
    assert view.series["reward/total"].steps == [1]  # no point read twice
    assert "normal in GRPO" in update.hints_md


def test_status_change_and_failure_message_show_up(db):
    rid = make_run(db)
    view = RunView()
    poll(db, view, rid)
    run_store.set_status(
        db, rid, RunStatus.FAILED, error="ValueError: bad prompt", traceback="Traceback ..."
    )
    update = poll(db, view, rid)
    assert "failed" in update.status_md
    assert "ValueError: bad prompt" in update.error
    assert "Traceback" in update.error


def test_logs_and_sample_steps_come_with_progress(db):
    rid = make_run(db)
    view = RunView()
    poll(db, view, rid)
    log_store.append_logs(db, rid, [(1.0, "INFO", "loading model")])
    sample_store.add_samples(db, rid, 1, [{"prompt": "p", "completion": "c", "total": 1.0}])
    run_store.heartbeat(db, rid, 1)
    update = poll(db, view, rid)
    assert "loading model" in update.logs
    assert update.sample_steps == [1]


def test_switching_runs_resets_the_view(db):
    a, b = make_run(db, "grpo-aaaa1111"), make_run(db, "grpo-bbbb2222")
    log_step(db, a, 1, {"reward/total": 0.1})
    view = RunView()
    poll(db, view, a)
    assert "reward/total" in view.series
    update = poll(db, view, b)
    assert view.run_id == b and view.series == {}
    assert len(update.figures) == len(PANELS)  # every panel redrawn, empty


def test_deleted_run_clears_the_view(db):
    rid = make_run(db)
    view = RunView()
    poll(db, view, rid)
    run_store.delete_run(db, rid)
    update = poll(db, view, rid)
    assert update.runs_table == []
    assert "No run selected" in update.status_md


def test_runs_table_formats_duration():
    from storage.runs import RunInfo

    run = RunInfo(
        id="r",
        name="n",
        algorithm="rloo",
        status=RunStatus.COMPLETED,
        config={},
        created_at=0.0,
        started_at=100.0,
        ended_at=3825.0,
        last_step=5,
    )
    row = runs_table([run], now=5000.0)[0]
    assert row[3] == "5"
    assert row[4] == row[5] == ""  # no tags, no note
    assert row[6].endswith("00:00")  # created, which a resume (a new started_at) keeps
    assert row[7] == "1:02:05"  # ended_at - started_at, not "now"


@pytest.fixture
def parts():
    import gradio as gr

    from ui.runs.layout import build_runs_parts

    with gr.Blocks():
        return build_runs_parts()


def test_a_quiet_tick_updates_only_the_view_state(db, parts):
    from ui.runs.tab import poll_updates

    view = RunView()
    assert poll_updates(parts, view, RunsUpdate()) == {parts.view: view}


def test_each_change_goes_to_its_own_component(db, parts):
    from ui.runs.tab import poll_updates

    rid = make_run(db)
    log_step(db, rid, 1, {"reward/total": 0.5})
    view = RunView()
    update = poll(db, view, rid)
    updates = poll_updates(parts, view, update)
    assert set(updates) <= set(parts.poll_outputs)
    assert updates[parts.table] == update.runs_table
    assert updates[parts.status_md] == update.status_md
    assert updates[parts.hints_md] == update.hints_md
    assert {parts.plots[key] for key in update.figures} <= set(updates)
    assert updates[parts.stop].interactive and not updates[parts.delete].interactive
    # New choices, never a value: a pick made while this poll ran stays picked.
    assert "value" not in updates[parts.run_select].constructor_args
    ppo_only = [key for key, p in {p.key: p for p in PANELS}.items() if p.only_for == ("ppo",)]
    assert ppo_only and all(not updates[parts.panel_columns[k]].visible for k in ppo_only)


def test_the_samples_picker_follows_the_newest_step_and_drops_another_runs_step(db, parts):
    from ui.runs.tab import poll_updates

    rid = make_run(db)
    other = make_run(db, "grpo-bbbb2222")
    for step in (1, 2):
        sample_store.add_samples(db, rid, step, [{"prompt": "p", "completion": "c"}])
    for step in (3, 7):
        sample_store.add_samples(db, other, step, [{"prompt": "p", "completion": "c"}])
    view = RunView()
    assert poll_updates(parts, view, poll(db, view, rid))[parts.step_select].value == 2
    sample_store.add_samples(db, rid, 3, [{"prompt": "p", "completion": "c"}])
    log_step(db, rid, 3, {"reward/total": 1.0})
    shown = poll_updates(parts, view, poll(db, view))[parts.step_select].value
    assert shown == 3 and view.samples_key == (rid, 3)  # it was on the newest step: it follows
    assert view.pick_sample_step(1)
    sample_store.add_samples(db, rid, 4, [{"prompt": "p", "completion": "c"}])
    log_step(db, rid, 4, {"reward/total": 1.0})
    updates = poll_updates(parts, view, poll(db, view))
    assert updates[parts.step_select].value == 1  # picked: it stays
    # Step 3 is a step of the other run too; a pick in the first run is not a pick in it.
    assert view.pick_sample_step(3)
    assert poll_updates(parts, view, poll(db, view, other))[parts.step_select].value == 7
    assert view.samples_key == (other, 7)


def test_a_tick_never_takes_a_selection_from_the_page(db, parts):
    from ui.runs.tab import poll_updates

    a, b = make_run(db, "grpo-aaaa1111"), make_run(db, "grpo-bbbb2222")
    view = RunView()
    poll(db, view, a)
    poll(db, view, b)  # the user picked b
    log_step(db, a, 1, {"reward/total": 0.1})  # the list moves: the tick redraws it
    run_store.heartbeat(db, a, 1)
    update = poll(db, view)  # a tick, whatever the page held when it was sent
    assert view.run_id == b
    assert update.run_choices is not None
    assert "value" not in poll_updates(parts, view, update)[parts.run_select].constructor_args


def test_the_picker_is_emptied_when_its_run_is_deleted(db, parts):
    from ui.runs.tab import poll_updates

    rid = make_run(db)
    view = RunView()
    poll(db, view, rid)
    run_store.delete_run(db, rid)
    updates = poll_updates(parts, view, poll(db, view))
    assert updates[parts.run_select].constructor_args == {"choices": [], "value": None}


def test_empty_panels_are_hidden_and_grpo_notes_are_not_shown_for_ppo(db, parts):
    from ui.runs.tab import poll_updates

    rid = "ppo-cccc3333"
    run_store.create_run(db, run_id=rid, algorithm="ppo", config={}, status=RunStatus.RUNNING)
    log_step(db, rid, 1, {"loss/policy": 0.01, "loss/value": 3.0})
    view = RunView()
    updates = poll_updates(parts, view, poll(db, view, rid))
    assert updates[parts.panel_columns["loss"]].visible
    assert not updates[parts.panel_columns["reward"]].visible
    assert not updates[parts.panel_notes["loss"]].visible  # the note is about GRPO/RLOO
    figure = poll(db, RunView(), rid).figures["loss"]
    assert [t.get("yaxis") for t in figure["data"]] == [None, "y2"]
    assert figure["layout"]["yaxis2"]["overlaying"] == "y"


def test_a_run_asked_to_stop_reads_stopping_with_its_phase_until_it_stops(db):
    rid = make_run(db)
    phase_store.record_phase(db, rid, RunPhase.LOADING_MODEL)
    view = RunView()
    update = poll(db, view, rid)
    assert "**running**" in update.status_md and "Loading the model" in update.progress_html
    assert "step 0 of 3" in update.progress_html
    view.stop_asked = rid
    log_step(db, rid, 1, {"reward/total": 1.0})
    update = poll(db, view, rid)
    assert "**stopping…**" in update.status_md and "Stopping" in update.progress_html
    phase_store.record_phase(db, rid, RunPhase.STOPPING, 1)
    run_store.set_status(db, rid, RunStatus.STOPPED)
    update = poll(db, view, rid)
    assert "**stopped**" in update.status_md and "stopped at step 1 of 3" in update.progress_html
    # Resumed: a new attempt runs and is not "stopping" any more, even before it records a
    # phase (the newest phase row is still the first attempt's stop).
    run_store.update_run(db, rid, status=RunStatus.QUEUED, attempt=2)
    run_store.set_status(db, rid, RunStatus.RUNNING)
    update = poll(db, view, rid)
    assert "**running**" in update.status_md and "Stopping" not in update.progress_html
    phase_store.record_phase(db, rid, RunPhase.LOADING_MODEL)
    update = poll(db, view, rid)
    assert "**running**" in update.status_md and "Loading the model" in update.progress_html


def test_the_runs_notes_show_as_warnings_beside_its_hints(db):
    from storage.records.notes import add_note
    from storage.sqlite.schema import NoteKind

    rid = make_run(db)
    add_note(db, rid, 3, NoteKind.CONSTANT_COMPONENT, "format paid 0 on all 24 samples: <try>")
    add_note(db, rid, 0, NoteKind.OUT_OF_MEMORY_RETRY, "retrying once at micro-batch 2")
    log_step(db, rid, 3, {"loss/policy": 0.0})
    update = poll(db, RunView(), rid)
    first, second, *rest = update.hints_md.split("\n\n")
    # Escaped as Markdown (main's messages.escape): the ':' and '<' show as typed.
    assert r"(step 3): format paid 0 on all 24 samples\: &lt;try&gt;" in first
    assert "Reward gives no signal" in first
    assert r"(step 0): retrying once at micro\-batch 2" in second
    assert "Retried after running out of memory" in second
    assert rest and "normal in GRPO" in rest[0]  # the metric hints follow


def test_an_actions_message_lasts_while_the_status_it_led_to_does(db):
    rid = make_run(db)
    view = RunView()
    poll(db, view, rid)
    run_store.set_status(db, rid, RunStatus.STOPPED)
    poll(db, view, rid)
    run_store.set_status(db, rid, RunStatus.QUEUED)  # Resume queues the run ...
    view.said(rid)  # ... and says "Resuming ..."
    assert not poll(db, view, rid).clear_message  # the status the resume led to
    log_step(db, rid, 1, {"reward/total": 0.5})
    assert not poll(db, view, rid).clear_message  # a step: same status, message kept
    run_store.set_status(db, rid, RunStatus.RUNNING)
    assert poll(db, view, rid).clear_message  # moved on: "Resuming ..." is history
    run_store.set_status(db, rid, RunStatus.COMPLETED)
    assert not poll(db, view, rid).clear_message  # cleared once; a later message is new


def test_an_actions_message_is_not_cleared_by_another_runs_status(db):
    a, b = make_run(db, "grpo-aaaa1111"), make_run(db, "grpo-bbbb2222")
    view = RunView()
    poll(db, view, a)
    view.said(a)
    poll(db, view, a)
    poll(db, view, b)  # the message went with the switch (the picker's change clears it)
    run_store.set_status(db, b, RunStatus.COMPLETED)
    assert not poll(db, view, b).clear_message


def test_an_empty_runs_table_says_why():
    from ui.runs.poll import empty_list_text
    from ui.runs.run_filter import RunFilter

    assert "Train" in empty_list_text(0, 0, RunFilter())
    searched = empty_list_text(3, 0, RunFilter.from_inputs("nothing <b>", "failed", None))
    assert searched.startswith("No run of your 3 matches “nothing &lt;b&gt;” and status failed")
    assert empty_list_text(3, 1, RunFilter.from_inputs("x", None, None)) == ""


def test_a_resumed_runs_charts_by_time_mark_its_stop_and_count_from_its_start(db):
    from ui.plots.charts import ChartOptions

    rid = make_run(db)
    phase_store.record_phase(db, rid, RunPhase.STARTING)
    log_step(db, rid, 1, {"reward/total": 0.1, "perf/num_tokens": 500.0})
    view = RunView()
    by_time = ChartOptions(x="time")
    first = poll(db, view, rid, options=by_time)
    assert "shapes" not in first.figures["reward"]["layout"]
    assert first.figures["reward"]["layout"]["xaxis"]["title"]["text"] == (
        "minutes since the run started"
    )
    phase_store.record_phase(db, rid, RunPhase.STOPPING, 1)
    run_store.set_status(db, rid, RunStatus.STOPPED)
    poll(db, view, rid, options=by_time)
    run_store.update_run(db, rid, status=RunStatus.QUEUED, attempt=2)
    run_store.set_status(db, rid, RunStatus.RUNNING)
    phase_store.record_phase(db, rid, RunPhase.STARTING)
    phase_store.record_phase(db, rid, RunPhase.RESUMING, 1)
    log_step(db, rid, 2, {"loss/policy": 0.2})
    update = poll(db, view, rid, options=by_time)
    # A new gap is drawn on every chart, not only on those with new points.
    assert {"reward", "loss"} <= set(update.figures)
    band, line = update.figures["reward"]["layout"]["shapes"]
    assert band["type"] == "rect" and band["x0"] <= band["x1"] == line["x0"]
    assert view.clock.completions_per_step == 64 and view.clock.gaps[0].from_step == 1
    by_tokens = poll(db, view, rid, force=True, options=ChartOptions(x="tokens"))
    assert by_tokens.figures["reward"]["data"][0]["x"] == [500.0]
