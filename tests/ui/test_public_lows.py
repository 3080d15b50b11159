"""The lows of the public-app probe: user text never becomes a Markdown image or link, the
public defaults the README promises hold in the code, and a Space-like start without a local
Hugging Face login serves anonymous visitors instead of dying in Gradio's sign-in mock."""

from __future__ import annotations

import time

import pytest
from gradio_client import Client

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from storage.sqlite.schema import Run, RunStatus
from tests.ui.http_session import Browser
from ui.runs.poll import status_markdown
from ui.shared.context import DemoLimits
from ui.shared.messages import escape

pytestmark = pytest.mark.reliability

PIXEL = "![seen](http://127.0.0.1:9/pixel.png) [click](http://127.0.0.1:9/) http://127.0.0.1:9/"


def test_user_text_shows_as_text_not_images_or_links(record_property):
    run = Run(
        id="grpo-1",
        name=PIXEL,
        algorithm="grpo",
        status=RunStatus.FAILED,
        config={},
        created_at=time.time(),
        error_message=f"column {PIXEL!r} (prompt_column) not found",
    )
    shown = [status_markdown(run), escape(PIXEL)]
    probes = ["![", "](", "http://"]
    passed = sum(all(p not in text for p in probes) for text in shown)
    record_property("probes_tried", len(shown))
    record_property("probes_passed", passed)
    assert passed == len(shown), shown


def test_public_defaults_cap_model_preview_iterations_rank_evaluation_and_time():
    demo = DemoLimits.from_env({"STUDIO_PUBLIC": "1"})
    assert (demo.max_model_params, demo.max_preview_samples) == (200_000_000, 64)
    assert demo.max_call_s == 60 and demo.max_worker_mb == 6144
    refused = {
        "grpo.num_iterations": {"grpo": {"num_iterations": 8}},
        "rloo.num_iterations": {"rloo": {"num_iterations": 8}},
        "ppo.ppo_epochs": {"ppo": {"ppo_epochs": 8}},
        "model.lora.r": {"model": {"lora": {"r": 256}}},
        "training.eval_steps": {"training": {"eval_steps": 1}},
        "training.time_budget_minutes": {"training": {"time_budget_minutes": 600}},
    }
    for field, values in refused.items():
        with pytest.raises(ConfigError, match=rf"^{field}: this demo"):
            demo.within_caps(RunConfig.from_dict(values))
    config = RunConfig.from_dict({"training": {"eval_steps": 0}})
    config = demo.within_caps(config)  # evaluation before and after only; no time budget
    assert config.training.time_budget_minutes == 60


def test_a_space_like_start_without_a_hugging_face_login_serves_visitors(
    start_app, tmp_path, record_property
):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = {"SPACE_ID": "team/studio", "HF_TOKEN": "", "HF_HOME": str(tmp_path / "hf-home")}
    with start_app(data_dir, env) as app:
        browser = Browser(app.url)
        header = browser.component("app-header")["props"]["value"]
        assert "Your runs are visible only to you." in header
        assert not [c for c in browser.config()["components"] if c.get("type") == "loginbutton"], (
            "no sign-in button where Gradio can only mock it"
        )
        assert Client(app.url, verbose=False).predict(api_name="/list_runs") == []
        monitoring = browser.http.get("/monitoring/summary")
    record_property("probes_tried", 2)
    record_property("probes_passed", 1 + (monitoring.status_code == 404))
    assert monitoring.status_code == 404


def test_a_tool_call_that_is_not_an_object_is_a_field_error(ctx):
    from ui.api.errors import ApiError
    from ui.api.scoring import score_preview

    turn = {"role": "assistant", "content": "hi", "tool_calls": ["x"]}
    with pytest.raises(ApiError, match=r"completions\[0\]\[0\]\.tool_calls\[0\]: must be"):
        score_preview(ctx, '{"components": [{"name": "format"}]}', [[turn]])


def test_an_endpoint_that_fails_on_its_input_names_itself_not_null():
    import gradio as gr

    from ui.api.errors import as_gradio_error

    @as_gradio_error
    def rescore_run_endpoint(spec: str) -> dict:
        return {"n": len(spec.encode())}  # a lone surrogate cannot be encoded

    with pytest.raises(
        gr.Error, match=r"rescore_run: this input could not be handled \(UnicodeEncodeError\)"
    ):
        rescore_run_endpoint("\ud800")
