"""The Runs view tells a stuck PPO critic (issue 43): the run's typed note under its own title,
and the value chart's line with the healthy ranges of explained variance and value loss."""

from __future__ import annotations

from storage.records.notes import add_note
from storage.sqlite.schema import NoteKind
from tests.ui.test_run_poll import db, log_step, make_run  # noqa: F401
from ui.plots.panels import PANELS
from ui.runs.poll import RunView, poll


def test_the_critic_note_shows_as_a_warning_with_its_title(db):  # noqa: F811
    rid = make_run(db, "ppo-aaaa1111")
    message = "the critic's explained variance stayed below 0 for 5 steps from the start"
    add_note(db, rid, 5, NoteKind.CRITIC_NOT_LEARNING, message, {"warmup_steps": 0})
    log_step(db, rid, 5, {"ppo/explained_variance": -0.4})
    first = poll(db, RunView(), rid).hints_md.split("\n\n")[0]
    assert "PPO's critic is not learning (step 5)" in first
    assert "stayed below 0 for 5 steps" in first


def test_the_value_and_kl_charts_say_what_healthy_looks_like():
    notes = {p.key: p.note for p in PANELS}
    assert "near 1 is a critic that predicts the returns" in notes["value"]
    assert "below 0 is worse than a constant" in notes["value"]
    assert "half the square of the reward's std" in notes["value"]
    assert "0.001-0.02 is a healthy step" in notes["kl"]
