"""/generate and /export_model over real HTTP (gradio_client against the app's process)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from gradio_client import Client

from engine.config import RunConfig
from engine.tokenizer import build_char_tokenizer
from storage.schema import RunStatus
from tests.in_process_run import run_in_process
from tests.tiny_models import save_tiny_llama


@pytest.fixture(scope="module")
def app_with_run(tmp_path_factory, start_app):
    root = tmp_path_factory.mktemp("pg-http")
    model_dir = save_tiny_llama(root / "tiny", build_char_tokenizer())
    data_dir = root / "data"
    data_dir.mkdir()
    config = RunConfig.from_dict(
        {
            "name": "http run",
            "model": {"name_or_path": str(model_dir)},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {"steps": 1, "prompts_per_step": 2, "eval_samples": 0},
        }
    )
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    with start_app(data_dir) as app:
        yield app, run_id


def test_generate_and_export_through_the_client(app_with_run):
    app, run_id = app_with_run
    client = Client(app.url, verbose=False)
    out = client.predict(
        run_id,
        "What is 2 + 3?",
        "final",
        {"num_samples": 2, "max_new_tokens": 6},
        api_name="/generate",
    )
    assert out["model"] == "final" and len(out["replies"]) == 2 and len(out["totals"]) == 2
    path, command = client.predict(run_id, "gguf", "Q8_0", api_name="/export_model")
    names = zipfile.ZipFile(path).namelist()
    assert {"README.md", "http-run-Q8_0.gguf"} <= set(names) and command == ""
    assert not Path(path).is_relative_to(app.data_dir)  # a copy, never the data dir itself
    with pytest.raises(Exception, match="format: must be one of hf, merged, gguf, ollama"):
        client.predict(run_id, "exe", api_name="/export_model")
