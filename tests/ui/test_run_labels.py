"""Finding and labelling runs: the filter of the runs table, tags and a note per run saved for
the viewer's own runs only, and shown (escaped) in the runs table and in Compare."""

from __future__ import annotations

import pytest

from storage import labels as label_store
from storage import runs as run_store
from storage.sqlite.schema import RunStatus
from ui.access.identity import Viewer
from ui.compare.tab import read_runs, summary_markdown
from ui.runs.actions import RunActionError
from ui.runs.labels_view import label_texts, save_label
from ui.runs.poll import RUN_COLUMNS, poll
from ui.runs.run_filter import ANY_STATUS, RunFilter
from ui.runs.state import RunView

ALICE = Viewer("user:alice", "alice")
BOB = Viewer("user:bob", "bob")
ADMIN = Viewer("user:carol", "carol", is_admin=True)


def make_run(db, run_id, name, owner=ALICE.owner, status=RunStatus.COMPLETED, step=0):
    run_store.create_run(
        db,
        run_id=run_id,
        name=name,
        algorithm=run_id.split("-")[0],
        config={},
        owner=owner,
        status=RunStatus.RUNNING,
    )
    run_store.update_run(db, run_id, last_step=step)
    if status != RunStatus.RUNNING:
        run_store.set_status(db, run_id, status)


@pytest.fixture
def runs(ctx):
    make_run(ctx.db, "grpo-1", "zeta", step=5)
    make_run(ctx.db, "ppo-2", "alpha", status=RunStatus.FAILED, step=9)
    make_run(ctx.db, "grpo-3", "mid", status=RunStatus.RUNNING, step=1)
    make_run(ctx.db, "rloo-9", "bobs", owner=BOB.owner)
    return ctx


def table_ids(update) -> list[str]:
    return [row[0] for row in update.runs_table]


def test_the_table_is_searched_filtered_and_sorted_and_the_picker_keeps_every_run(runs):
    db = runs.db
    save_label(db, ALICE, "grpo-1", "baseline, lr-sweep", "first good one")
    view = RunView()
    everything = poll(db, view, None, owner=ALICE.scope, force=True)
    assert table_ids(everything) == ["grpo-3", "ppo-2", "grpo-1"]  # newest first
    assert len(everything.runs_table[0]) == len(RUN_COLUMNS)
    assert everything.runs_table[2][RUN_COLUMNS.index("tags")] == "baseline, lr-sweep"
    assert everything.runs_table[2][RUN_COLUMNS.index("note")] == "first good one"

    def shown(query="", status=ANY_STATUS, sort="newest first") -> list[str]:
        update = poll(db, view, None, owner=ALICE.scope, run_filter=RunFilter(query, status, sort))
        assert [rid for _, rid in update.run_choices] == ["grpo-3", "ppo-2", "grpo-1"]
        return table_ids(update)

    assert shown("grpo") == ["grpo-3", "grpo-1"]  # the algorithm, in the id
    assert shown("BASELINE good") == ["grpo-1"]  # a tag and a word of the note, any case
    assert shown("baseline nothing") == []
    assert shown("bobs") == []  # another user's run is never listed
    assert shown(status="failed") == ["ppo-2"]
    assert shown(sort="name") == ["ppo-2", "grpo-3", "grpo-1"]
    assert shown(sort="most steps") == ["ppo-2", "grpo-1", "grpo-3"]
    assert shown(sort="oldest first") == ["grpo-1", "ppo-2", "grpo-3"]
    # The same filter again redraws nothing; a stale or forged control value filters nothing.
    assert poll(db, view, None, owner=ALICE.scope, run_filter=RunFilter(sort="oldest first")).empty
    forged = RunFilter.from_inputs(["x"], "deleted", "by password")
    assert forged == RunFilter()


def test_tags_and_note_are_saved_for_the_owner_only_and_bounded_by_field(runs):
    db = runs.db
    tags, note, message = save_label(db, ALICE, "grpo-1", " a, b ,A ", " try <b>x</b> ")
    assert (tags, note) == ("a, b", "try <b>x</b>")
    assert "zeta" in message
    assert label_texts(db, ALICE, "grpo-1") == ("a, b", "try <b>x</b>")
    # Bob can neither read nor write Alice's labels: her run reads like a missing one.
    assert label_texts(db, BOB, "grpo-1") == ("", "")
    with pytest.raises(RunActionError, match=r"^No run with id 'grpo-1'\.$"):
        save_label(db, BOB, "grpo-1", "mine", "")
    assert label_store.label_of(db, "grpo-1").tags == ["a", "b"]
    assert save_label(db, ADMIN, "grpo-1", "checked", "")[0] == "checked"
    with pytest.raises(RunActionError, match=r"^note: .* a note has at most 2,000"):
        save_label(db, ALICE, "grpo-1", "", "x" * 2001)
    with pytest.raises(RunActionError, match=r"^tags: .* a tag has at most 32"):
        save_label(db, ALICE, "grpo-1", "y" * 40, "")
    with pytest.raises(RunActionError, match="Pick a run first"):
        save_label(db, ALICE, None, "a", "")


def test_compare_shows_tags_and_note_escaped(runs):
    db = runs.db
    save_label(db, ALICE, "grpo-1", "<i>x</i>, [link](javascript:0)", "line one\n# not a heading")
    summary = summary_markdown(db, read_runs(db, ["grpo-1", "ppo-2"]))
    first, second = summary.split("\n")
    assert "*&lt;i&gt;x&lt;/i&gt;*" in first
    assert r"\[link\]\(javascript\:0\)" in first
    assert r"note: line one \# not a heading" in first
    assert "tags" not in second and "note" not in second


def test_the_table_shows_a_notes_first_line_cut_short():
    from ui.runs.poll import NOTE_CHARS, note_cell

    assert note_cell("") == ""
    assert note_cell("  lr too high\nsecond line") == "lr too high"
    cut = note_cell("x" * 500)
    assert len(cut) == NOTE_CHARS and cut.endswith("…")
