import zipfile

import pytest

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from storage import runs as run_store
from storage.records import samples as sample_store
from storage.sqlite.schema import RunStatus
from ui.access.identity import LOCAL_VIEWER
from ui.runs import actions as run_actions
from ui.runs.actions import RunActionError
from ui.shared.context import DemoLimits, SettingsError, auth_from_env


def test_auth_from_env_pairs_and_single_user():
    assert auth_from_env({}) is None
    assert auth_from_env({"STUDIO_AUTH": "alice:a1, bob:b:2"}) == [("alice", "a1"), ("bob", "b:2")]
    assert auth_from_env({"STUDIO_USERNAME": "carol", "STUDIO_PASSWORD": "c3"}) == [("carol", "c3")]


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"STUDIO_AUTH": "alice"}, "STUDIO_AUTH"),
        ({"STUDIO_USERNAME": "carol"}, "STUDIO_PASSWORD"),
        ({"STUDIO_DEMO_MAX_STEPS": "many"}, "STUDIO_DEMO_MAX_STEPS"),
        ({"STUDIO_DEMO_MAX_STEPS": "0"}, "STUDIO_DEMO_MAX_STEPS"),
    ],
)
def test_bad_settings_name_their_variable(env, field):
    with pytest.raises(SettingsError) as err:
        auth_from_env(env)
        DemoLimits.from_env(env)
    assert err.value.field == field


def test_demo_limits_describe_themselves():
    limits = DemoLimits.from_env({"STUDIO_DEMO_MAX_STEPS": "50"})
    assert limits.max_steps == 50 and limits.active
    assert "at most 50 training steps" in limits.describe()
    assert DemoLimits.from_env({}).describe() == ""


def test_the_steps_cap_is_stored_once_and_read_by_every_check():
    limits = DemoLimits(sizes={"training.steps": 5})
    assert limits.max_steps == 5 and limits.active  # the Train form's cap
    assert "at most 5 training steps" in limits.describe()
    config = RunConfig.from_dict({"training": {"steps": 6}})
    with pytest.raises(ConfigError, match=r"training\.steps: this demo allows at most 5 steps"):
        limits.within_caps(config)


def make_run(ctx, status=RunStatus.COMPLETED):
    folder = ctx.runs_root() / "grpo-1234abcd"
    folder.mkdir()
    run_store.create_run(
        ctx.db,
        run_id="grpo-1234abcd",
        algorithm="grpo",
        config={"algorithm": "grpo"},
        output_dir=str(folder),
        status=RunStatus.RUNNING,
    )
    if status != RunStatus.RUNNING:
        run_store.set_status(ctx.db, "grpo-1234abcd", status)
    return folder


def test_downloads_need_the_files(ctx):
    folder = make_run(ctx)
    with pytest.raises(RunActionError, match="no checkpoint yet"):
        run_actions.checkpoint_archive(ctx.db, LOCAL_VIEWER, "grpo-1234abcd", into=folder.parent)
    # The config comes from the run's row (its one record), whatever the folder holds.
    (folder / "config.yaml").write_text("algorithm: rloo\n")
    assert (
        run_actions.config_file(ctx.db, LOCAL_VIEWER, "grpo-1234abcd").read_text()
        == "algorithm: grpo\n"
    )
    for step in (2, 10):  # complete checkpoints: the trainer writes its state file last
        (folder / f"checkpoint-{step}").mkdir()
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (folder / "checkpoint-10" / "model.safetensors").write_bytes(b"weights")
    archive = run_actions.checkpoint_archive(
        ctx.db, LOCAL_VIEWER, "grpo-1234abcd", into=folder.parent
    )
    assert sorted(zipfile.ZipFile(archive).namelist()) == [  # the newest one
        "model.safetensors",
        "trainer_state.json",
    ]
    (folder / "final").mkdir()
    assert run_actions.latest_model_dir(folder).name == "final"


def test_run_data_downloads_as_one_zip(ctx, tmp_path):
    make_run(ctx)
    with pytest.raises(RunActionError, match="Pick a run"):
        run_actions.run_data_archive(ctx.db, LOCAL_VIEWER, None)
    with pytest.raises(RunActionError, match="No run with id 'nope'"):
        run_actions.run_data_archive(ctx.db, LOCAL_VIEWER, "nope")
    archive = run_actions.run_data_archive(ctx.db, LOCAL_VIEWER, "grpo-1234abcd", into=tmp_path)
    names = set(zipfile.ZipFile(archive).namelist())
    assert names == {
        "run.json",
        "config.yaml",
        "metrics.csv",
        "samples.jsonl",
        "distributions.jsonl",
        "logs.txt",
    }


def test_actions_explain_what_is_missing(ctx):
    with pytest.raises(RunActionError, match="Pick a run"):
        run_actions.stop_run(ctx.db, ctx.launcher, LOCAL_VIEWER, None)
    with pytest.raises(RunActionError, match="No run with id"):
        run_actions.resume_run(ctx.db, ctx.launcher, LOCAL_VIEWER, "nope")
    make_run(ctx, RunStatus.COMPLETED)
    with pytest.raises(RunActionError, match="completed"):
        run_actions.resume_run(ctx.db, ctx.launcher, LOCAL_VIEWER, "grpo-1234abcd")


def test_push_to_hub_checks_its_inputs_before_any_network(ctx):
    make_run(ctx)
    with pytest.raises(RunActionError, match="owner/name"):
        run_actions.push_to_hub(ctx.db, LOCAL_VIEWER, "grpo-1234abcd", "no-slash", "hf_x")
    with pytest.raises(RunActionError, match="token"):
        run_actions.push_to_hub(ctx.db, LOCAL_VIEWER, "grpo-1234abcd", "alice/model", " ")
    with pytest.raises(RunActionError, match="no checkpoint to push"):
        run_actions.push_to_hub(ctx.db, LOCAL_VIEWER, "grpo-1234abcd", "alice/model", "hf_x")


def test_sample_table_has_a_column_per_component(ctx):
    make_run(ctx)
    trace = [
        {"name": "correctness", "raw": 1.0, "explanation": "answer 4 = gold 4"},
        {"name": "format", "raw": None, "explanation": "not scored"},
    ]
    sample_store.add_samples(
        ctx.db,
        "grpo-1234abcd",
        3,
        [
            {
                "prompt": "system: be brief\nuser: 2+2?",
                "completion": "<answer>4</answer>",
                "total": 1.0,
                "trace": trace,
                "group": 0,
            }
        ],
    )
    headers, rows = run_actions.samples_table(ctx.db, LOCAL_VIEWER, "grpo-1234abcd", 3)
    assert headers[6:] == ["correctness", "format", "why"]
    assert rows[0][1] == "2+2?"  # the user's question, not the system prompt
    assert rows[0][6:8] == ["1", "–"]
    assert "answer 4 = gold 4" in rows[0][8]
