"""/generate and /export_model over real HTTP (gradio_client against the app's process)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from gradio_client import Client


@pytest.fixture(scope="module")
def app_with_run(tiny_run, start_app):
    """The app over the data dir of the session's tiny trained run (tests/ui/conftest.py)."""
    data_dir, run_id = tiny_run
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
    assert {"README.md", "tiny-Q8_0.gguf"} <= set(names) and command == ""
    assert not Path(path).is_relative_to(app.data_dir)  # a copy, never the data dir itself
    with pytest.raises(Exception, match="format: must be one of hf, merged, gguf, ollama"):
        client.predict(run_id, "exe", api_name="/export_model")
