from types import SimpleNamespace

from storage.progress import RunProgress
from storage.sqlite.schema import RunStatus
from ui.plots.series import Series
from ui.runs.state import RunsSnapshot, RunView


def point(step, name, value):
    return SimpleNamespace(step=step, name=name, value=value)


def test_series_appends_in_step_order():
    s = Series()
    s.add(1, 0.5)
    s.add(2, None)
    assert (s.steps, s.values) == ([1, 2], [0.5, None])
    assert s.last == 0.5  # a gap does not hide the newest real value


def test_series_replaces_steps_trained_again_after_a_resume():
    s = Series()
    for step, value in [(1, 0.1), (2, 0.2), (3, 0.3), (4, 0.4)]:
        s.add(step, value)
    s.add(3, 0.9)  # resumed from the checkpoint at step 2
    assert (s.steps, s.values) == ([1, 2, 3], [0.1, 0.2, 0.9])


def test_view_absorbs_points_and_reports_changed_series():
    view = RunView(run_id="r1")
    changed = view.absorb([point(1, "reward/total", 0.2), point(1, "loss/policy", 0.0)], 7)
    assert changed == {"reward/total", "loss/policy"}
    assert view.cursor == 7
    assert view.absorb([], 7) == set()
    assert view.latest() == {"reward/total": 0.2, "loss/policy": 0.0}


def test_view_needs_metrics_only_when_the_database_is_ahead_of_its_cursor():
    view = RunView(run_id="r1", cursor=10)
    assert not view.needs_metrics(RunProgress(RunStatus.RUNNING, 3, 10, None))
    assert view.needs_metrics(RunProgress(RunStatus.RUNNING, 3, 11, None))
    assert not view.needs_metrics(None)


def test_selecting_another_run_forgets_points_but_keeps_the_list_key():
    view = RunView(run_id="r1", cursor=5, list_key=(("r1", "running", 3),))
    view.absorb([point(1, "reward/total", 1.0)], 5)
    view.select("r2")
    assert (view.run_id, view.cursor, view.series, view.status) == ("r2", 0, {}, None)
    assert view.list_key == (("r1", "running", 3),)


def test_progress_changed_tracks_status_and_step():
    view = RunView(run_id="r1")
    running = RunProgress(RunStatus.RUNNING, 2, 4, 100.0)
    assert view.progress_changed(running)
    view.mark_shown(running)
    assert not view.progress_changed(running._replace(heartbeat_at=105.0))
    assert view.progress_changed(running._replace(last_step=3))
    assert view.progress_changed(running._replace(status=RunStatus.COMPLETED))
    view.mark_shown(running._replace(status=RunStatus.COMPLETED))
    assert view.finished


def test_log_lines_are_capped_at_the_newest():
    view = RunView(run_id="r1", max_log_lines=3)
    assert view.absorb_logs(["a", "b"], 2)
    assert view.absorb_logs(["c", "d"], 4)
    assert view.log_lines == ["b", "c", "d"]
    assert view.log_cursor == 4
    assert not view.absorb_logs([], 4)


def test_snapshot_list_key_ignores_heartbeats_and_cursors():
    a = RunsSnapshot({"r1": RunProgress(RunStatus.RUNNING, 2, 10, 1.0)})
    b = RunsSnapshot({"r1": RunProgress(RunStatus.RUNNING, 2, 12, 2.0)})
    c = RunsSnapshot({"r1": RunProgress(RunStatus.COMPLETED, 2, 12, 2.0)})
    assert a.list_key() == b.list_key() != c.list_key()


def test_a_view_copied_for_a_session_gets_a_lock_of_its_own():
    import copy

    view = RunView()
    copied = copy.deepcopy(view)  # what gr.State does with the initial value per session
    assert copied.lock is not view.lock
    with view.lock, copied.lock:  # independent: holding one does not block the other
        pass


def test_the_samples_are_keyed_by_run_and_step():
    view = RunView(run_id="r1")
    assert view.samples_key is None
    assert view.offer_sample_steps([1, 2, 3])
    assert view.samples_key == ("r1", 3)
    view.samples_shown = view.samples_key
    view.select("r2")  # same step numbers, another run: the table is not the one shown
    assert not view.pick_sample_step(3)  # r2's steps not read yet: r1's step is not taken
    view.offer_sample_steps([1, 2, 3])
    assert view.samples_key == ("r2", 3) != view.samples_shown


def test_the_step_picked_stays_and_a_step_left_on_the_newest_follows():
    view = RunView(run_id="r1")
    view.offer_sample_steps([1, 2])
    assert not view.offer_sample_steps([1, 2])  # nothing moved: no redraw
    assert view.offer_sample_steps([1, 2, 3]) and view.sample_step == 3
    assert view.pick_sample_step("1") and view.sample_step == 1
    assert not view.pick_sample_step(9) and view.sample_step == 1
    assert view.offer_sample_steps([1, 2, 3, 4]) and view.sample_step == 1
    assert view.offer_sample_steps([2, 3, 4]) and view.sample_step == 4  # 1 is gone: newest
