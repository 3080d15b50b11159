import threading

from ui.runs.deletes import PendingDeletes


def test_a_delete_happens_after_its_window_unless_undone():
    done: list[str] = []
    fired = threading.Event()

    def delete(run_id):
        def run():
            done.append(run_id)
            fired.set()

        return run

    pending = PendingDeletes(window_s=0.2)
    pending.schedule("kept", delete("kept"))
    pending.schedule("gone", delete("gone"))
    assert pending.pending("kept") and pending.cancel("kept")
    assert not pending.cancel("kept")  # undone once only
    assert fired.wait(5)
    assert done == ["gone"] and not pending.pending("gone")
    assert not pending.cancel("gone")  # too late
