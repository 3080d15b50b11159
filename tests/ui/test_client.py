"""The named API endpoints through ``gradio_client`` against the live app."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from gradio_client import Client

SPEC = {"components": [{"name": "correctness", "weight": 1.0}, {"name": "format", "weight": 0.5}]}
RUN = {
    "name": "client run",
    "training": {
        "steps": 2,
        "prompts_per_step": 2,
        "eval_samples": 0,
        "save_steps": 0,
        "samples_per_log": 4,
    },
    "generation": {"num_generations": 4, "max_completion_length": 32},
    "reward": SPEC,
}


@pytest.fixture(scope="module")
def client(live_app):
    return Client(live_app.url, verbose=False)


def test_the_named_endpoints_are_listed(client):
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    for name in ("/score_preview", "/start_run", "/run_status", "/run_metrics", "/list_runs"):
        assert name in endpoints


def test_score_preview(client):
    out = client.predict(
        spec=json.dumps(SPEC),
        completions=["<think>2+2: 4</think><answer>4</answer>", "<answer>5</answer>"],
        prompts=None,
        answers=["4", "4"],
        api_name="/score_preview",
    )
    assert out["totals"] == [1.5, 0.0]
    assert [t["name"] for t in out["samples"][0]["trace"]] == ["correctness", "format"]


def test_a_bad_config_is_refused_with_its_field(client):
    with pytest.raises(Exception, match=r"config\.training\.steps"):
        client.predict(config="training:\n  steps: -1\n", api_name="/start_run")


@pytest.mark.slow
def test_start_a_run_and_read_its_metrics(client):
    started = client.predict(config=yaml.safe_dump(RUN), api_name="/start_run")
    run_id = started["run_id"]
    assert started["status"] in ("queued", "running")
    deadline = time.monotonic() + 420
    status = client.predict(run_id=run_id, api_name="/run_status")
    while status["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(2)
        status = client.predict(run_id=run_id, api_name="/run_status")
    assert status["status"] == "completed", status.get("error_traceback")
    assert status["last_step"] == 2

    page = client.predict(run_id=run_id, cursor=0, names=None, api_name="/run_metrics")
    rewards = [(step, value) for step, name, value in page["points"] if name == "reward/total"]
    assert [step for step, _ in rewards] == [1, 2]
    assert all(isinstance(value, float) for _, value in rewards)
    assert any(name == "rewards/correctness" for _, name, _ in page["points"])
    again = client.predict(
        run_id=run_id, cursor=page["cursor"], names=None, api_name="/run_metrics"
    )
    assert again["points"] == []
    listed = client.predict(api_name="/list_runs")
    assert run_id in [r["run_id"] for r in listed]


def test_login_from_environment_variables(tmp_path, start_app):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with start_app(data_dir, env={"STUDIO_AUTH": "alice:s3cret"}) as app:
        with pytest.raises(Exception):  # noqa: B017 (gradio_client raises a plain ValueError)
            Client(app.url, verbose=False)
        client = Client(app.url, auth=("alice", "s3cret"), verbose=False)
        assert client.predict(api_name="/list_runs") == []
