import json

import pytest

from engine.config.run_config import RunConfig
from storage import runs as run_store
from storage.records.metrics import MetricWriter
from storage.sqlite.schema import RunStatus
from ui import api
from ui.access.identity import LOCAL_VIEWER
from ui.api import ApiError
from ui.shared.context import AppContext, DemoLimits

SPEC = {"components": [{"name": "correctness", "weight": 1.0}, {"name": "format", "weight": 0.5}]}


def test_score_preview_returns_totals_and_traces(ctx):
    out = api.score_preview(
        ctx, SPEC, ["<think>1+1: 2</think><answer>2</answer>", "no idea"], answers=["2", "2"]
    )
    assert out["components"] == ["correctness", "format"]
    assert out["totals"] == [1.5, 0.0]
    assert out["samples"][0]["trace"][0]["explanation"]


def test_score_preview_reads_yaml_specs_and_names_bad_fields(ctx):
    assert api.score_preview(ctx, "components:\n- name: format\n", ["x"])["totals"] == [0.0]
    with pytest.raises(ApiError, match=r"spec\.components\[0\]\.weight"):
        api.score_preview(ctx, {"components": [{"name": "format", "weight": "heavy"}]}, ["x"])
    with pytest.raises(ApiError, match="answers: 1 values for 2"):
        api.score_preview(ctx, SPEC, ["a", "b"], answers=["1"])


def test_start_run_rejects_a_bad_config_before_any_process(ctx):
    with pytest.raises(ApiError, match=r"config\.training\.steps"):
        api.start_run(ctx, "training:\n  steps: 0\n", viewer=LOCAL_VIEWER)
    assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []


def test_start_run_respects_the_demo_cap(data_dir):
    ctx = AppContext(data_dir, demo=DemoLimits(sizes={"training.steps": 5}))
    try:
        with pytest.raises(ApiError, match="at most 5 steps"):
            api.start_run(ctx, {"training": {"steps": 6}}, viewer=LOCAL_VIEWER)
    finally:
        ctx.close()


def test_status_and_metrics_by_cursor(ctx):
    run = run_store.create_run(ctx.db, algorithm="grpo", config={}, status=RunStatus.RUNNING)
    with MetricWriter(ctx.db, run.id) as writer:
        writer.log(1, {"reward/total": 0.5, "loss/policy": 0.0})
    status = api.run_status(ctx, run.id, viewer=LOCAL_VIEWER)
    assert status["status"] == "running" and status["last_step"] == 1
    first = api.run_metrics(ctx, run.id, viewer=LOCAL_VIEWER)
    assert sorted(first["points"]) == [[1, "loss/policy", 0.0], [1, "reward/total", 0.5]]
    assert api.run_metrics(ctx, run.id, first["cursor"], viewer=LOCAL_VIEWER)["points"] == []
    only = api.run_metrics(ctx, run.id, 0, ["reward/total"], viewer=LOCAL_VIEWER)
    assert only["points"] == [[1, "reward/total", 0.5]]


def test_unknown_run_is_named(ctx):
    with pytest.raises(ApiError, match="run_id: no run with id 'nope'"):
        api.run_status(ctx, "nope", viewer=LOCAL_VIEWER)
    with pytest.raises(ApiError, match="run_id"):
        api.run_metrics(ctx, "nope", viewer=LOCAL_VIEWER)


def test_json_numbers_in_exponent_form_stay_numbers(ctx):
    spec = '{"components": [{"name": "correctness", "params": {"abs_tol": 1e-06}}]}'
    assert api.score_preview(ctx, spec, ["<answer>4</answer>"], answers=["4"])["totals"] == [1.0]


def test_a_model_size_cap_is_checked_from_the_config_before_any_download(
    data_dir, tmp_path, monkeypatch
):
    from engine.models.specs import DEFAULT_MODEL_DIR

    monkeypatch.setenv("STUDIO_MODEL_ROOTS", str(tmp_path))  # where the web may load folders

    big = tmp_path / "big-model"  # a config of 2M+ parameters and no weights at all
    big.mkdir()
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
    config.update(hidden_size=256, intermediate_size=1024)
    (big / "config.json").write_text(json.dumps(config))
    ctx = AppContext(data_dir, demo=DemoLimits(max_model_params=1_000_000))
    try:
        with pytest.raises(
            ApiError, match=r"config\.model\.name_or_path: [\d,]+ parameters is over"
        ):
            api.start_run(ctx, {"model": {"name_or_path": str(big)}}, viewer=LOCAL_VIEWER)
        with pytest.raises(ApiError, match="cannot be read from its config"):
            api.start_run(
                ctx, {"model": {"name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}}, viewer=LOCAL_VIEWER
            )
        assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []
        ctx.check_model_size(RunConfig().model)  # 0.68M parameters: fits
    finally:
        ctx.close()


def test_score_preview_caps_request_size_naming_the_field_and_the_cap(ctx):
    from ui.api import MAX_API_TEXT_CHARS, MAX_API_TOTAL_CHARS

    long = "word " * (MAX_API_TEXT_CHARS // 5 + 1)
    with pytest.raises(ApiError, match=r"completions\[1\]: [\d,]+ characters; at most 20,000"):
        api.score_preview(ctx, SPEC, ["ok", long])
    with pytest.raises(ApiError, match=r"answers\[0\]: [\d,]+ characters; at most 20,000"):
        api.score_preview(ctx, SPEC, ["ok"], answers=[long])
    many = ["x" * MAX_API_TEXT_CHARS] * (MAX_API_TOTAL_CHARS // MAX_API_TEXT_CHARS + 1)
    with pytest.raises(ApiError, match=r"completions: [\d,]+ characters .* at most 1,000,000"):
        api.score_preview(ctx, SPEC, many)
    with pytest.raises(ApiError, match=r"completions: at most 1000 per call"):
        api.score_preview(ctx, SPEC, ["x"] * 1001)
    with pytest.raises(ApiError, match=r"prompts\[0\]: must be a string, got 5"):
        api.score_preview(ctx, SPEC, ["x"], prompts=[5])
    with pytest.raises(ApiError, match=r"completions: must be a list of strings"):
        api.score_preview(ctx, SPEC, "x")
    # JSON can carry an unpaired surrogate; RE2 (step markers, rules) takes UTF-8 only
    reasoning = {"components": [{"name": "reasoning_steps", "weight": 1.0}]}
    with pytest.raises(ApiError, match=r"completions\[1\]: must be valid Unicode text"):
        api.score_preview(ctx, reasoning, ["Step 1: ok", "\ud800"])
    with pytest.raises(ApiError, match=r"prompts\[0\]: must not contain NUL"):
        api.score_preview(ctx, SPEC, ["x"], prompts=["a\x00b"])
    with pytest.raises(ApiError, match=r"^spec: the text is over 1,000,000 characters"):
        api.score_preview(ctx, " " * 1_000_001, ["x"])
    with pytest.raises(ApiError, match=r"^config: the text is over 1,000,000 characters"):
        api.start_run(ctx, " " * 1_000_001, viewer=LOCAL_VIEWER)


def test_slow_math_answers_are_cut_off_by_the_call_deadline(ctx, monkeypatch):
    from rewards.verification import mathpool
    from ui.api import scoring

    # Each check alone may now take minutes (sympy builds 10^(10^n) exactly); only the call's
    # deadline can end the request.
    monkeypatch.setattr(mathpool.get_checker(), "timeout_s", 600.0)
    monkeypatch.setattr(scoring, "INTERACTIVE_DEADLINE_S", 3.0)
    towers = [f"<answer>$10^{{10^{{{n}}}}}$</answer>" for n in range(10, 30)]
    out = api.score_preview(ctx, SPEC, towers, answers=["24"] * len(towers))
    correctness = [s["trace"][0] for s in out["samples"]]
    assert all("could not be verified in time" in t["explanation"] for t in correctness)
    assert api.score_preview(ctx, SPEC, ["<answer>2</answer>"], answers=["2"])["totals"][0] >= 1.0


def test_each_endpoint_has_a_concurrency_limit(ctx):
    from ui.factory import build_app

    demo = build_app(ctx)
    limits = {f.api_name: f.concurrency_limit for f in demo.fns.values()}
    for name, limit in api.CONCURRENCY.items():
        assert limits[name] == limit
    assert limits["score_preview"] <= 2 and limits["start_run"] <= 2


def test_demo_caps_every_size_field_of_a_run(data_dir):
    from ui.shared.context import DEMO_SIZE_CAPS

    demo = DemoLimits.from_env({"STUDIO_DEMO_MAX_STEPS": "5", "STUDIO_DEMO_MAX_ROWS": "50"})
    assert demo.max_steps == 5 and demo.sizes["data.max_rows"] == 50
    assert set(demo.sizes) == set(DEMO_SIZE_CAPS)  # the rest take their public defaults
    ctx = AppContext(data_dir, demo=demo)
    huge = {
        "training.prompts_per_step": 4096,
        "generation.num_generations": 64,
        "generation.max_completion_length": 32768,
        "training.eval_samples": 100_000,
        "training.samples_per_log": 4096,
        "data.max_rows": 51,
        "training.steps": 6,
    }
    try:
        for path, value in huge.items():
            section, name = path.split(".")
            config = {"training": {"steps": 5, "prompts_per_step": 1}}
            config.setdefault(section, {})[name] = value
            with pytest.raises(ApiError, match=rf"^config\.{path}: this demo allows at most"):
                api.start_run(ctx, config, viewer=LOCAL_VIEWER)
        assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []
        config = RunConfig.from_dict({"training": {"steps": 5}})
        capped = demo.within_caps(config)  # an unset row cap takes the demo's
        assert capped.data.max_rows == 50
        assert config.data.max_rows is None  # the config checked is left as it was
        assert "dataset rows up to 50" in demo.describe()
    finally:
        ctx.close()


def test_a_private_app_has_no_size_caps():
    assert DemoLimits.from_env({}).sizes == {}
    assert DemoLimits.from_env({"SPACE_ID": "alice/studio"}).max_steps == 200
    # A public app off Spaces (anonymous visitors, as ui.access.identity treats it) is capped too.
    public = DemoLimits.from_env({"STUDIO_PUBLIC": "1"})
    assert public.max_steps == 200 and public.sizes["generation.num_generations"] == 16


@pytest.mark.parametrize("empty", ["", "  \n", "{}", {}, "null"])
def test_start_run_refuses_an_empty_config_instead_of_starting_a_default_run(ctx, empty):
    with pytest.raises(ApiError, match=r"^config: (empty|must be).*YAML or JSON") as err:
        api.start_run(ctx, empty, viewer=LOCAL_VIEWER)
    if empty != "null":
        assert "python -m engine export-config" in str(err.value)
    assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []


@pytest.mark.parametrize(
    "cursor", [10**30, 2**63, -1, 1e30, float("nan"), float("inf"), 2.5, True, False, "5", None]
)
def test_run_metrics_refuses_a_cursor_out_of_range_naming_it(ctx, cursor):
    run = run_store.create_run(ctx.db, algorithm="grpo", config={}, status=RunStatus.RUNNING)
    with pytest.raises(ApiError, match=rf"^cursor: must be a whole number from 0 to {2**63 - 1}"):
        api.run_metrics(ctx, run.id, cursor, viewer=LOCAL_VIEWER)


def test_run_metrics_takes_the_largest_cursor_and_whole_floats(ctx):
    run = run_store.create_run(ctx.db, algorithm="grpo", config={}, status=RunStatus.RUNNING)
    with MetricWriter(ctx.db, run.id) as writer:
        writer.log(1, {"reward/total": 0.5})
    assert api.run_metrics(ctx, run.id, 2**63 - 1, viewer=LOCAL_VIEWER)["points"] == []
    assert api.run_metrics(ctx, run.id, 0.0, viewer=LOCAL_VIEWER)["points"] == [
        [1, "reward/total", 0.5]
    ]


def test_run_metrics_bounds_the_names_filter(ctx):
    run = run_store.create_run(ctx.db, algorithm="grpo", config={}, status=RunStatus.RUNNING)
    many = [f"m/{i}" for i in range(40_000)]  # past SQLite's limit on bound parameters
    with pytest.raises(ApiError, match=r"^names: at most 256 metric names per call"):
        api.run_metrics(ctx, run.id, 0, many, viewer=LOCAL_VIEWER)
    assert api.run_metrics(ctx, run.id, 0, many[:256], viewer=LOCAL_VIEWER)["points"] == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temp": 1}, "settings.temp: unknown field; allowed: temperature, top_p, max_new_tokens"),
        ({1: 2}, "settings.1: unknown field; allowed: temperature"),
        ([1], "settings: must be a mapping, got list"),
        ({"seed": "x"}, "settings.seed: must be an integer, got 'x'"),
        ({"top_p": 0}, r"settings.top_p: must be in \(0, 1\], got 0"),  # the bound reconciled
    ],
)
def test_generate_settings_are_read_like_a_config_section(settings, message):
    with pytest.raises(ApiError, match=message):
        api.sampling_settings(settings)
    assert api.sampling_settings({"num_samples": 3.0}).num_samples == 3
