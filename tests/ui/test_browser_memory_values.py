"""Values kept in the browser, read back: each through its input's own check, a bad one
dropped and named, never raised."""

import pytest

from rewards.errors import RewardSpecError
from rewards.spec import DEFAULT_PRESET, MAX_SPEC_CHARS, PRESETS
from ui.memory import saved
from ui.plots.charts import ChartOptions
from ui.train import form as train_form

FIELDS = {f.path: f for f in train_form.form_fields()}


def test_a_saved_design_goes_through_the_import_parser_and_its_limits():
    spec = PRESETS[DEFAULT_PRESET]
    assert saved.saved_spec(spec.to_json(indent=None)) == spec
    for bad in (None, 3, {"components": []}, "not: [valid", "x" * (MAX_SPEC_CHARS + 1)):
        with pytest.raises(RewardSpecError):
            saved.saved_spec(bad)
    with pytest.raises(RewardSpecError, match="weight"):
        saved.saved_spec('{"components": [{"name": "format", "weight": "heavy"}]}')


def test_chart_settings_fall_back_per_value_and_round_trip():
    for x in ("step", "time", "wall", "completions", "tokens"):  # every x axis is kept
        options = ChartOptions(0.6, x, True)
        assert saved.chart_settings(saved.chart_record(options)) == options
    assert saved.chart_settings({"smoothing": 5, "x": "<b>", "log_y": "yes"}) == ChartOptions()
    assert saved.chart_settings(["not", "a", "mapping"]) is None


def test_train_values_keep_what_each_input_takes_and_name_the_rest():
    got = saved.train_values(
        {
            "name": "my run",
            "algorithm": "rloo",
            "model": {"key": "default", "lora": True, "lora_r": 1.5, "owner": "alice"},
            "data": {"source": "builtin", "task": "calculator", "split": "heldout", "file": "x"},
            "hyper": {
                "training.steps": 40,
                "training.learning_rate": 1e-5,
                "generation.temperature": "hot",
                "training.nope": 1,
                "training.eval_steps": True,  # a bool is not a number here
            },
        },
        FIELDS,
        train_form.algorithms(),
        ["default", "custom"],
    )
    assert (got.name, got.algorithm) == ("my run", "rloo")
    assert got.model == {"key": "default", "lora": True}
    # The task is kept (a reload once put back the agent model on the arithmetic task); an
    # uploaded file is not: it lives on the server.
    assert got.data == {"source": "builtin", "task": "calculator", "split": "heldout"}
    assert got.hyper == {"training.steps": 40, "training.learning_rate": 1e-5}
    assert sorted(got.dropped) == sorted(
        [
            "model.lora_r",
            "model.owner",
            "data.file",
            "generation.temperature",
            "training.nope",
            "training.eval_steps",
        ]
    )
    # An out-of-range number is the form's to refuse on its field, as if typed.
    assert saved.train_values({"hyper": {"training.steps": -3}}, FIELDS, [], []).hyper == {
        "training.steps": -3
    }
    nothing = saved.train_values("junk", FIELDS, ["grpo"], [])
    assert (nothing.name, nothing.algorithm, nothing.hyper, nothing.dropped) == (None, None, {}, [])
    wrong = saved.train_values({"name": "x" * 5000, "algorithm": "dpo"}, FIELDS, ["grpo"], [])
    assert wrong.dropped == ["name", "algorithm"]


def test_the_browser_key_is_one_per_data_dir_and_not_the_cookie_secret(tmp_path):
    from ui.access.visitor_cookie import server_secret
    from ui.memory.wiring import browser_key

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    key = browser_key(first)
    assert key == browser_key(first)  # a restart reads the same key: stored values still open
    assert key != browser_key(second)
    assert key not in server_secret(first).decode()


def test_train_data_values_take_only_the_sources_and_tasks_there_are():
    stored = {"data": {"source": "ftp", "task": "<b>", "hub_id": 7}}
    got = saved.train_values(stored, FIELDS, [], [])
    assert got.data == {}
    assert sorted(got.dropped) == ["data.hub_id", "data.source", "data.task"]
