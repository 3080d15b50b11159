"""A run whose model or data cannot be used is refused with the field to fix, before it exists."""

import http.server
import importlib.util
import json
import socket
import threading

import pytest
import torch

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.run.launcher import Launcher
from engine.run.preflight import check_inputs
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from ui import api
from ui.access.identity import LOCAL_VIEWER
from ui.api import ApiError
from ui.shared.context import AppContext


def config(**sections) -> RunConfig:
    return RunConfig.from_dict(sections)


def refused_field(cfg: RunConfig) -> str:
    with pytest.raises(ConfigError) as err:
        check_inputs(cfg)
    return err.value.field


def test_the_default_model_and_task_pass():
    check_inputs(RunConfig())


def test_model_problems_name_the_model_field(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    assert refused_field(config(model={"name_or_path": str(tmp_path / "nowhere")})) == (
        "model.name_or_path"
    )
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no config\.json"):
        check_inputs(config(model={"name_or_path": str(tmp_path / "empty")}))
    with pytest.raises(ConfigError, match="neither a local folder nor a Hugging Face model id"):
        check_inputs(config(model={"name_or_path": "not a model!"}))
    with pytest.raises(ConfigError, match=r"network access is off \(HF_HUB_OFFLINE=1\)"):
        check_inputs(config(model={"name_or_path": "someone/some-model"}))


@pytest.mark.skipif(torch.cuda.is_available(), reason="4-bit loading works on a GPU")
def test_four_bit_without_a_gpu_is_refused():
    assert refused_field(config(model={"load_in_4bit": True})) == "model.load_in_4bit"
    with pytest.raises(ConfigError) as err:
        check_inputs(config(model={"load_in_4bit": True, "lora": {"r": 8}}))
    message = str(err.value)
    assert "needs a CUDA GPU, and this machine has none" in message
    assert "Set model.load_in_4bit to false" in message
    if importlib.util.find_spec("bitsandbytes") is None:
        assert "pip install bitsandbytes" in message


def test_data_file_problems_name_the_data_field(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "1+1?", "answer": "2"}) + "\n", encoding="utf-8")
    missing = config(data={"source": "file", "path": str(tmp_path / "none.jsonl")})
    assert refused_field(missing) == "data.path"
    wrong_column = config(data={"source": "file", "path": str(rows), "split": "all"})
    with pytest.raises(ConfigError, match=r"columns are \['question', 'answer'\]") as err:
        check_inputs(wrong_column)
    assert err.value.field == "data.prompt_column"
    check_inputs(
        config(
            data={"source": "file", "path": str(rows), "split": "all", "prompt_column": "question"}
        )
    )


def test_a_refused_run_leaves_no_trace(data_dir, tmp_path):
    bad = config(data={"source": "file", "path": str(tmp_path / "none.jsonl")})
    with pytest.raises(ConfigError, match=r"^data\.path: "):
        Launcher(data_dir).start(bad)
    with Database(db_path(data_dir)) as db:
        assert run_store.list_runs(db) == []
    assert not any((data_dir / "runs").glob("*"))


def test_the_api_names_the_field(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("STUDIO_MODEL_ROOTS", str(tmp_path))  # the web may load folders there
    ctx = AppContext(data_dir)
    try:
        with pytest.raises(ApiError, match=r"^config\.model\.name_or_path: no such local folder"):
            api.start_run(
                ctx, {"model": {"name_or_path": str(tmp_path / "nowhere")}}, viewer=LOCAL_VIEWER
            )
        assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []
    finally:
        ctx.close()


def test_the_cli_prints_the_field_without_a_traceback(data_dir, tmp_path, engine_cli):
    path = tmp_path / "bad.yaml"
    path.write_text(f"data:\n  source: file\n  path: {tmp_path / 'none.jsonl'}\n", encoding="utf-8")
    result = engine_cli("train", path, "--data-dir", data_dir)
    assert result.returncode == 2
    assert "data.path: dataset file" in result.stderr and "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(torch.cuda.device_count() >= 2, reason="this machine has the GPUs")
def test_more_gpus_than_the_machine_has_are_refused():
    with pytest.raises(ConfigError, match=r"2 GPUs asked for, and this machine has \d; set it"):
        check_inputs(config(training={"num_gpus": 2}))


@pytest.mark.parametrize("tracker", ["tensorboard", "wandb", "trackio"])
def test_a_tracker_that_is_not_installed_is_refused_with_the_install_command(
    tracker, tmp_path, monkeypatch
):
    cfg = config(training={"report_to": [tracker]})
    if importlib.util.find_spec(tracker) is None:
        with pytest.raises(
            ConfigError, match=rf"not installed; install it with `pip install {tracker}`"
        ) as err:
            check_inputs(cfg)
        assert err.value.field == "training.report_to[0]"
    # Once a package of that name can be imported, the same config passes.
    (tmp_path / tracker).mkdir()
    (tmp_path / tracker / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    check_inputs(cfg)


def test_trackio_is_installed_and_a_ppo_run_asking_for_a_tracker_is_refused():
    check_inputs(config(training={"report_to": ["trackio"]}))  # works out of the box
    with pytest.raises(ConfigError, match="PPO runs report to Reward Studio only") as err:
        check_inputs(config(algorithm="ppo", training={"report_to": ["trackio"]}))
    assert err.value.field == "training.report_to"


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is not None, reason="installed here")
def test_the_api_refuses_a_missing_tracker_before_the_run_exists(data_dir):
    ctx = AppContext(data_dir)
    try:
        with pytest.raises(ApiError, match=r"^config\.training\.report_to\[0\]: 'tensorboard'"):
            api.start_run(ctx, "training:\n  report_to: [tensorboard]\n", viewer=LOCAL_VIEWER)
        assert api.list_runs(ctx, viewer=LOCAL_VIEWER) == []
    finally:
        ctx.close()


def test_hub_datasets_offline_are_refused_before_the_run_exists_like_hub_models(
    data_dir, tmp_path, monkeypatch, engine_cli
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-datasets-cache"))
    with pytest.raises(ConfigError, match="not a Hugging Face dataset id") as err:
        check_inputs(config(data={"source": "hub", "path": "not a dataset!"}))
    assert err.value.field == "data.path"
    path = tmp_path / "hub.yaml"
    path.write_text("data:\n  source: hub\n  path: someone/some-data\n", encoding="utf-8")
    result = engine_cli("train", path, "--data-dir", data_dir)
    assert result.returncode == 2, result.stderr
    assert "data.path: dataset 'someone/some-data' is not in the local cache" in result.stderr
    assert "Traceback" not in result.stderr
    with Database(db_path(data_dir)) as db:
        assert run_store.list_runs(db) == []


class _FakeHubHandler(http.server.BaseHTTPRequestHandler):
    """A local HTTP server answering model look-ups as the Hub does: gated or not found."""

    def do_GET(self):
        code, error = (403, "GatedRepo") if "gated" in self.path else (404, "RepoNotFound")
        body = json.dumps({"error": "Repository not found"}).encode()
        self.send_response(code)
        self.send_header("X-Error-Code", error)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def online_hub(monkeypatch, tmp_path):
    """Network on, the Hub at a local HTTP server (nothing leaves the machine)."""
    from huggingface_hub import constants

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeHubHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    yield constants
    server.shutdown()


def test_a_hub_model_that_does_not_exist_is_refused_while_online(online_hub):
    with pytest.raises(ConfigError, match="no model 'nobody/no-such-model' on the Hugging Face"):
        check_inputs(config(model={"name_or_path": "nobody/no-such-model"}))
    check_inputs(config(model={"name_or_path": "someone/gated-model"}))  # exists, needs a token


def test_an_unreachable_hub_does_not_refuse_a_model(online_hub, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    monkeypatch.setattr(online_hub, "ENDPOINT", f"http://127.0.0.1:{closed}")
    check_inputs(config(model={"name_or_path": "someone/some-model"}))


def test_the_cli_refuses_an_empty_config_file(data_dir, tmp_path, engine_cli):
    for text in ("", "\n# nothing\n", "{}\n"):
        path = tmp_path / "empty.yaml"
        path.write_text(text, encoding="utf-8")
        result = engine_cli("train", path, "--data-dir", data_dir)
        assert result.returncode == 2, result.stderr[-2000:]
        assert "is empty" in result.stderr and "Traceback" not in result.stderr
    with Database(db_path(data_dir)) as db:
        assert run_store.list_runs(db) == []
