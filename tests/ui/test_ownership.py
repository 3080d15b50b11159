"""Run ownership in the functions behind the page and the API: who a request is, and that a
user lists, reads, acts on, compares and downloads only their own runs (admins: every run)."""

from __future__ import annotations

import gradio as gr
import pytest
import yaml

from storage import runs as run_store
from storage.records.metrics import MetricWriter
from storage.run_caps import ActiveRunCaps
from storage.sqlite.schema import RunStatus
from ui import api
from ui.access.identity import (
    LOCAL_VIEWER,
    IdentityError,
    Viewer,
    run_caps,
    viewer_for,
)
from ui.access.visitor_cookie import OWNER_HEADER, issue, owner_key, verify, vouch
from ui.api import ApiError
from ui.compare.tab import comparison
from ui.runs import actions as run_actions
from ui.runs.poll import poll
from ui.runs.state import RunView
from ui.runs.tab import initial_selection
from ui.shared.context import SettingsError

ALICE = Viewer("user:alice", "alice")
BOB = Viewer("user:bob", "bob")
ADMIN = Viewer("user:carol", "carol", is_admin=True)


def profile(username: str) -> gr.OAuthProfile:
    info = {"preferred_username": username, "name": username, "profile": "", "picture": ""}
    return gr.OAuthProfile(info)


def test_identity_comes_from_sign_in_then_login_then_session():
    env = {"SPACE_ID": "team/studio", "STUDIO_ADMINS": "hf:carol, user:dave"}
    request = gr.Request(username="alice", session_hash="s1")
    assert viewer_for(request, profile("carol"), env) == Viewer("hf:carol", "carol", True)
    alice = viewer_for(request, None, env)
    assert (alice.owner, alice.is_admin, alice.caps) == ("user:alice", False, ActiveRunCaps(2, 4))
    # An anonymous visitor: the owner the cookie middleware vouched for, never the session.
    value, token = issue(b"server-secret")
    assert verify(b"server-secret", value) == token
    assert verify(b"other-secret", value) is None and verify(b"server-secret", token) is None
    vouched = {OWNER_HEADER: vouch(owner_key(token))}
    anon = viewer_for(gr.Request(session_hash="s1", headers=vouched), None, env)
    assert anon.owner == f"anon:{owner_key(token)}" and anon.anonymous and not anon.new
    # A client naming an owner itself is not vouched for: no identity at all.
    with pytest.raises(IdentityError):
        viewer_for(
            gr.Request(session_hash="s1", headers={OWNER_HEADER: owner_key(token)}), None, env
        )
    with pytest.raises(IdentityError):
        viewer_for(gr.Request(), None, env)
    # A private local app: one local owner, no caps; admins by their key.
    assert viewer_for(gr.Request(session_hash="s1"), None, {}) == LOCAL_VIEWER
    public = {"STUDIO_PUBLIC": "1"}
    assert viewer_for(gr.Request(session_hash="s1", headers=vouched), None, public).anonymous
    assert viewer_for(gr.Request(username="dave"), None, {"STUDIO_ADMINS": "user:dave"}).is_admin


def test_the_queue_cap_settings_are_checked():
    assert run_caps({}) == ActiveRunCaps(None, None)
    assert run_caps({"STUDIO_PUBLIC": "1"}) == ActiveRunCaps(2, 4)
    env = {"STUDIO_DEMO_MAX_QUEUED_RUNS": "5", "STUDIO_DEMO_MAX_ANON_RUNS": "9"}
    assert run_caps(env) == ActiveRunCaps(5, 9)
    for name in ("STUDIO_DEMO_MAX_QUEUED_RUNS", "STUDIO_DEMO_MAX_ANON_RUNS"):
        with pytest.raises(SettingsError, match=name):
            run_caps({name: "-1"})


def make_run(ctx, run_id: str, owner: str, status=RunStatus.COMPLETED, steps: int = 2):
    folder = ctx.runs_root() / run_id
    folder.mkdir()
    run_store.create_run(
        ctx.db,
        run_id=run_id,
        algorithm="grpo",
        config={"name": run_id, "training": {"steps": steps}},
        output_dir=str(folder),
        status=RunStatus.RUNNING,
        owner=owner,
    )
    with MetricWriter(ctx.db, run_id) as writer:
        for step in range(1, steps + 1):
            writer.log(step, {"reward/total": step / 10})
    if status != RunStatus.RUNNING:
        run_store.set_status(ctx.db, run_id, status)
    return folder


@pytest.fixture
def two_users(ctx):
    make_run(ctx, "alice-run", ALICE.owner)
    make_run(ctx, "bob-run", BOB.owner)
    return ctx


def test_the_api_serves_only_the_callers_runs(two_users):
    ctx = two_users
    assert [r["run_id"] for r in api.list_runs(ctx, viewer=ALICE)] == ["alice-run"]
    assert api.run_status(ctx, "alice-run", viewer=ALICE)["status"] == "completed"
    assert api.run_metrics(ctx, "alice-run", viewer=ALICE)["points"]
    for call in (
        lambda: api.run_status(ctx, "alice-run", viewer=BOB),
        lambda: api.run_metrics(ctx, "alice-run", viewer=BOB),
        lambda: api.run_action(ctx, "delete", "alice-run", viewer=BOB),
        lambda: api.run_action(ctx, "resume", "alice-run", viewer=BOB),
        lambda: api.run_action(ctx, "stop", "alice-run", viewer=BOB),
    ):
        # Exactly what a missing run says, so ids of other users' runs cannot be probed.
        with pytest.raises(ApiError, match=r"^run_id: no run with id 'alice-run'$"):
            call()
    assert run_store.get_run(ctx.db, "alice-run") is not None
    assert {r["run_id"] for r in api.list_runs(ctx, viewer=ADMIN)} == {"alice-run", "bob-run"}
    assert api.run_action(ctx, "delete", "bob-run", viewer=BOB)["run_id"] == "bob-run"
    assert run_store.get_run(ctx.db, "bob-run") is None


def test_run_actions_and_downloads_refuse_other_users_runs(two_users, tmp_path):
    ctx = two_users
    missing = r"^No run with id 'alice-run'\.$"
    for call in (
        lambda: run_actions.delete_run(ctx.db, ctx.launcher, BOB, "alice-run"),
        lambda: run_actions.stop_run(ctx.db, ctx.launcher, BOB, "alice-run"),
        lambda: run_actions.resume_run(ctx.db, ctx.launcher, BOB, "alice-run"),
        lambda: run_actions.config_file(ctx.db, BOB, "alice-run"),
        lambda: run_actions.checkpoint_archive(ctx.db, BOB, "alice-run"),
        lambda: run_actions.run_data_archive(ctx.db, BOB, "alice-run"),
        lambda: run_actions.push_to_hub(ctx.db, BOB, "alice-run", "bob/model", "hf_x"),
    ):
        with pytest.raises(run_actions.RunActionError, match=missing):
            call()
    assert run_actions.samples_table(ctx.db, BOB, "alice-run", 1)[1] == []
    # The owner's config download is the recorded config, written outside the data dir.
    copy = run_actions.config_file(ctx.db, ALICE, "alice-run")
    assert yaml.safe_load(copy.read_text()) == {"name": "alice-run", "training": {"steps": 2}}
    assert not copy.resolve().is_relative_to(ctx.data_dir.resolve())
    admin_copy = run_actions.config_file(ctx.db, ADMIN, "bob-run")
    assert yaml.safe_load(admin_copy.read_text())["name"] == "bob-run"


def test_runs_view_compare_and_links_show_only_the_viewers_runs(two_users):
    ctx = two_users
    view = RunView()
    update = poll(ctx.db, view, "alice-run", owner=BOB.scope, force=True)
    assert [row[0] for row in update.runs_table] == ["bob-run"]
    assert update.figures and view.series == {}  # alice's metrics were never read
    assert "No run selected" in update.status_md
    admin_view = RunView()
    update = poll(ctx.db, admin_view, "alice-run", owner=ADMIN.scope, force=True)
    assert update.status == "completed" and "reward/total" in admin_view.series

    bobs = comparison(ctx.db, ["alice-run", "bob-run"], None, owner=BOB.scope)
    assert bobs.headers == ["field", "bob-run"] and bobs.names == ["reward/total"]
    admins = comparison(ctx.db, ["alice-run", "bob-run"], None, owner=ADMIN.scope)
    assert admins.headers == ["field", "alice-run", "bob-run"]

    choices, pick = initial_selection(ctx, BOB, requested="alice-run")  # a ?run= link
    assert [rid for _, rid in choices] == ["bob-run"] and pick == "bob-run"


def test_a_user_with_too_many_active_runs_cannot_start_another(ctx):
    anon = Viewer("anon:s1", "anonymous visitor", caps=ActiveRunCaps(2, 3))
    make_run(ctx, "q1", anon.owner, status=RunStatus.RUNNING)
    run_store.create_run(ctx.db, run_id="q2", algorithm="grpo", config={}, owner=anon.owner)
    with pytest.raises(ApiError, match=r"runs: you have 2 queued or running runs.*\(2\)"):
        api.start_run(ctx, {"training": {"steps": 1}}, viewer=anon)
    assert len(run_store.list_runs(ctx.db)) == 2
    assert sorted(p.name for p in ctx.runs_root().iterdir()) == ["q1"]  # no folder left behind
    # A new browser session is a new owner, but anonymous visitors share a cap too.
    run_store.create_run(ctx.db, run_id="q3", algorithm="grpo", config={}, owner="anon:s2")
    other_session = Viewer("anon:s3", "anonymous visitor", caps=ActiveRunCaps(2, 3))
    with pytest.raises(ApiError, match=r"anonymous visitors have 3 .* \(3\); sign in"):
        api.start_run(ctx, {"training": {"steps": 1}}, viewer=other_session)
