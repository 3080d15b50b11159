"""What a visitor's run may read: uploads and listed folders only, hub ids only, no server token.

The CLI keeps reading any path the operator's YAML names; the web entry points (``/start_run``,
the Train form, the Preview) go through ``InputPolicy``.
"""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from engine.config.input_policy import InputPolicy
from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.run.launcher import Launcher
from engine.run.preflight import check_inputs
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from ui import api
from ui.access.identity import LOCAL_VIEWER, Viewer
from ui.api import ApiError
from ui.shared.context import AppContext
from ui.shared.data_inputs import data_spec

SECRET = "hunter2-secret-value"


@pytest.fixture
def secret_csv(tmp_path):
    """A server file a visitor must not read (a users table)."""
    path = tmp_path / "server" / "users.csv"
    path.parent.mkdir()
    path.write_text(f"user,password\nalice,{SECRET}\n", encoding="utf-8")
    return path


@pytest.fixture
def ctx(data_dir, monkeypatch):
    for name in ("STUDIO_DATA_ROOTS", "STUDIO_MODEL_ROOTS", "STUDIO_VISITOR_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    context = AppContext(data_dir)
    yield context
    context.close()


def file_config(path, **columns) -> dict:
    return {"data": {"source": "file", "path": str(path), "split": "all", **columns}}


def test_start_run_refuses_a_server_file_without_quoting_it(ctx, secret_csv):
    for columns in ({}, {"prompt_column": "user", "answer_column": "password"}):
        with pytest.raises(
            ApiError, match=r"config\.data\.path: must be a file you uploaded"
        ) as err:
            api.start_run(ctx, file_config(secret_csv, **columns), viewer=LOCAL_VIEWER)
        assert SECRET not in str(err.value) and "password" not in str(err.value).split(":")[0]
    with pytest.raises(ApiError) as err_missing:
        api.start_run(ctx, file_config(secret_csv.parent / "no-such.csv"), viewer=LOCAL_VIEWER)
    with pytest.raises(ApiError) as err_present:
        api.start_run(ctx, file_config(secret_csv), viewer=LOCAL_VIEWER)
    assert str(err_missing.value) == str(err_present.value)  # existence is not revealed
    assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []


def test_dot_dot_and_symlinks_out_of_the_uploads_are_refused(ctx, secret_csv):
    uploads = ctx.input_policy.uploads
    uploads.mkdir(parents=True)
    (uploads / "link.csv").symlink_to(secret_csv)
    escape = uploads / ".." / ".." / secret_csv.relative_to(secret_csv.parents[2])
    for path in (uploads / "link.csv", escape):
        assert not ctx.input_policy.file_allowed(str(path))
        with pytest.raises(ApiError, match=r"config\.data\.path"):
            api.start_run(ctx, file_config(path), viewer=LOCAL_VIEWER)


def test_an_upload_is_stored_under_the_data_dir_and_lists_its_columns(ctx, tmp_path):
    upload = tmp_path / "gradio-tmp" / "mine.jsonl"
    upload.parent.mkdir()
    upload.write_text(json.dumps({"question": "1+1?", "solution": "2"}) + "\n", encoding="utf-8")
    local = ctx.policy_for(LOCAL_VIEWER.owner)
    spec = data_spec("file", "", str(upload), "", "", "question", "answer", "", policy=local)
    stored = spec["path"]
    assert Path(stored).parent.parent == ctx.input_policy.uploads  # uploads/<owner folder>/
    assert Path(stored).read_text() == upload.read_text()
    again = data_spec("file", "", str(upload), "", "", "q", "a", "", policy=local)
    assert again["path"] == stored  # the same content is stored once
    with pytest.raises(
        ApiError, match=r"config\.data\.answer_column: .*\['question', 'solution'\]"
    ):
        api.start_run(ctx, {"data": {**spec, "split": "all"}}, viewer=LOCAL_VIEWER)


@pytest.mark.reliability
def test_a_run_may_name_only_its_owners_uploads(ctx, tmp_path, record_property):
    """A stored upload's name shows in configs and exports; another visitor naming it (or
    reaching it from their own folder) is refused, as if it were any other server file."""
    upload = tmp_path / "gradio-tmp" / "alice.jsonl"
    upload.parent.mkdir()
    upload.write_text(json.dumps({"prompt": "1+1?", "answer": "2"}) + "\n", encoding="utf-8")
    alice, bob = Viewer("user:alice", "alice"), Viewer("user:bob", "bob")
    admin = Viewer("user:carol", "carol", is_admin=True)
    stored = data_spec(
        "file", "", str(upload), "", "", "prompt", "answer", "", policy=ctx.policy_for(alice.owner)
    )["path"]
    bobs = ctx.policy_for(bob.owner).own_uploads
    probes = [stored, f"{bobs}/../{Path(stored).parent.name}/{Path(stored).name}"]
    (bobs).mkdir(parents=True)
    (bobs / "link.jsonl").symlink_to(stored)
    probes.append(str(bobs / "link.jsonl"))
    refused = 0
    for path in probes:
        with pytest.raises(ApiError, match=r"config\.data\.path: must be a file you uploaded"):
            api.start_run(ctx, file_config(path), viewer=bob)
        refused += 1
    record_property("probes_tried", len(probes))
    record_property("probes_passed", refused)
    # The owner and an admin may train on it (checked as the launcher checks, without a run).
    for viewer in (alice, admin):
        config = RunConfig.from_dict(file_config(stored))
        check_inputs(config, ctx.policy_for(viewer.owner, viewer.is_admin))


def test_operator_data_roots_are_readable_but_never_quoted(data_dir, secret_csv, monkeypatch):
    monkeypatch.setenv("STUDIO_DATA_ROOTS", f"/nonexistent{os.pathsep}{secret_csv.parent}")
    policy = InputPolicy.for_web(data_dir)
    assert policy.file_allowed(str(secret_csv))
    with pytest.raises(ConfigError) as err:
        check_inputs(RunConfig.from_dict(file_config(secret_csv)), policy)
    assert err.value.field == "data.prompt_column"
    assert "user" not in err.value.reason and SECRET not in err.value.reason
    gsm = secret_csv.parent / "gsm.jsonl"
    gsm.write_text(json.dumps({"prompt": "q", "answer": SECRET}) + "\n", encoding="utf-8")
    config = file_config(gsm, answer_format="gsm8k")
    with pytest.raises(ConfigError, match="answer_format") as err:
        check_inputs(RunConfig.from_dict(config), policy)
    assert SECRET not in str(err.value)


def test_hub_sources_take_hub_ids_only(ctx, tmp_path):
    for path in (str(tmp_path), "/etc", "engine/tasks", "../x/y", "gsm8k", "a/b/c"):
        with pytest.raises(ApiError, match=r"config\.data\.path: must be a Hugging Face dataset"):
            api.start_run(ctx, {"data": {"source": "hub", "path": path}}, viewer=LOCAL_VIEWER)
    ctx.input_policy.check_data(
        RunConfig.from_dict({"data": {"source": "hub", "path": "openai/gsm8k"}}).data
    )


def test_model_paths_from_the_web_do_not_reveal_whether_they_exist(ctx, tmp_path):
    messages = set()
    for name in ("/etc", str(tmp_path), "/no/such/model", "../default_model", "~/models"):
        with pytest.raises(ApiError, match=r"config\.model\.name_or_path") as err:
            api.start_run(ctx, {"model": {"name_or_path": name}}, viewer=LOCAL_VIEWER)
        messages.add(str(err.value))
    assert len(messages) == 1 and "not loadable from the web" in messages.pop()
    for allowed in ("default", "smollm2-135m-instruct", "Qwen/Qwen2.5-0.5B-Instruct"):
        ctx.input_policy.check_model(
            RunConfig.from_dict({"model": {"name_or_path": allowed}}).model
        )


def test_model_roots_allow_local_folders(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("STUDIO_MODEL_ROOTS", str(tmp_path / "models"))
    policy = InputPolicy.for_web(data_dir)
    (tmp_path / "models" / "mine").mkdir(parents=True)
    policy.check_model(
        RunConfig.from_dict({"model": {"name_or_path": str(tmp_path / "models" / "mine")}}).model
    )
    with pytest.raises(ConfigError):
        policy.check_model(
            RunConfig.from_dict(
                {"model": {"name_or_path": str(tmp_path / "models" / ".." / "x")}}
            ).model
        )


def test_the_cli_reads_any_path_the_operator_names(secret_csv):
    check_inputs(
        RunConfig.from_dict(file_config(secret_csv, prompt_column="user", answer_column="password"))
    )


def worker_environ(ctx: AppContext, dispatcher: Launcher | None = None) -> dict[str, str]:
    """Record a real run through the app's launcher, start it with ``dispatcher`` (default: the
    app's launcher; the CLI and finishing workers dispatch with a plain one) and read its
    worker's environment."""
    dispatcher = dispatcher or ctx.launcher
    run_id = ctx.launcher.record(RunConfig.from_dict({"training": {"steps": 1}}))
    dispatcher.dispatch()
    pid = run_store.get_run(ctx.db, run_id).pid
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    finally:
        os.killpg(pid, signal.SIGKILL)
        for _ in range(100):
            if dispatcher._children[run_id].poll() is not None:
                break
            time.sleep(0.05)
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc")
def test_visitor_runs_get_no_server_hub_token_unless_the_operator_allows_it(data_dir, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_server_secret")
    monkeypatch.delenv("STUDIO_VISITOR_HUB_TOKEN", raising=False)
    ctx = AppContext(data_dir)
    try:
        env = worker_environ(ctx)
    finally:
        ctx.close()
    assert "HF_TOKEN" not in env and env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    assert env["STUDIO_DATA_DIR"] == str(data_dir)
    ctx = AppContext(data_dir)
    try:  # a visitor's queued run started by the CLI or a finishing worker: still no token
        env = worker_environ(ctx, Launcher(data_dir))
    finally:
        ctx.close()
    assert "HF_TOKEN" not in env and env["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    monkeypatch.setenv("STUDIO_VISITOR_HUB_TOKEN", "1")
    ctx = AppContext(data_dir)
    try:
        env = worker_environ(ctx)
    finally:
        ctx.close()
    assert env["HF_TOKEN"] == "hf_server_secret" and "HF_HUB_DISABLE_IMPLICIT_TOKEN" not in env


def test_the_web_process_reads_models_without_the_server_token(data_dir, monkeypatch):
    from engine.models.loading import parameter_count
    from engine.models.specs import ModelSpec

    monkeypatch.delenv("STUDIO_VISITOR_HUB_TOKEN", raising=False)
    ctx = AppContext(data_dir)
    try:
        assert ctx._hub_token() is False  # huggingface_hub's "send no token"
        assert parameter_count(ModelSpec(), token=False) > 0
        model, _tokenizer = ctx.model(ModelSpec())  # the preview's load, token=False
        assert model is not None
    finally:
        ctx.close()
    monkeypatch.setenv("STUDIO_VISITOR_HUB_TOKEN", "1")
    ctx = AppContext(data_dir)
    try:
        assert ctx._hub_token() is None  # the server's own token, as the operator allowed
    finally:
        ctx.close()


def record_run(data_dir, data: dict) -> None:
    """A recorded run whose config (its database row, the run's one record) reads ``data``."""
    with Database(db_path(data_dir)) as db:
        run_store.create_run(
            db, run_id="r1", algorithm="grpo", config={"data": data}, output_dir="runs/r1"
        )


def test_uploads_beyond_the_quota_evict_unused_copies_then_are_refused(data_dir, tmp_path):
    policy = InputPolicy.for_web(data_dir, env={"STUDIO_MAX_UPLOADS_MB": "1"})
    sources = []
    for i in range(4):
        source = tmp_path / f"part{i}.jsonl"
        source.write_text(f'{{"question": "{i}", "answer": "{"x" * 400_000}"}}\n')
        sources.append(source)
    first = policy.store_upload(sources[0])
    os.utime(first, (1, 1))  # the oldest copy
    second = policy.store_upload(sources[1])
    third = policy.store_upload(sources[2])  # over 1 MiB: the oldest unused copy goes
    assert not first.exists() and second.exists() and third.exists()

    record_run(data_dir, {"path": str(second), "eval_path": str(third)})  # trains on both
    with pytest.raises(ConfigError, match=r"data\.path: .*full \(1 MiB, STUDIO_MAX_UPLOADS_MB\)"):
        policy.store_upload(sources[3])
    assert second.exists() and third.exists()
    assert sorted(p.name for p in policy.uploads.iterdir()) == sorted([second.name, third.name])


def test_the_uploads_quota_setting_is_checked(data_dir):
    with pytest.raises(ConfigError, match="STUDIO_MAX_UPLOADS_MB: must be a positive whole"):
        InputPolicy.for_web(data_dir, env={"STUDIO_MAX_UPLOADS_MB": "lots"})


def test_one_owners_uploads_are_capped_apart_from_everyone_elses(data_dir, tmp_path):
    env = {"STUDIO_MAX_UPLOADS_PER_USER_MB": "1"}
    policy = InputPolicy.for_web(data_dir, env=env)
    alice, bob = policy.for_owner("anon:alice"), policy.for_owner("anon:bob")
    sources = []
    for i in range(3):
        source = tmp_path / f"part{i}.jsonl"
        source.write_text(f'{{"question": "{i}", "answer": "{"x" * 600_000}"}}\n')
        sources.append(source)
    first = alice.store_upload(sources[0])
    record_run(data_dir, {"path": str(first)})  # Alice's run trains on her first upload
    with pytest.raises(ConfigError, match=r"data\.path: your uploads take the 1 MiB"):
        alice.store_upload(sources[1])
    assert bob.store_upload(sources[1]).exists()  # another visitor's room is their own
    assert first.exists()
