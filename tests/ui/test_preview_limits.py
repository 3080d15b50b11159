"""The Preview tab's inputs are bounded and limited to what a visitor may read."""

import pytest

from ui.preview.generate import PreviewError, PreviewRequest, load_prompts, resolve_model
from ui.shared.context import AppContext


@pytest.fixture
def ctx(data_dir, monkeypatch):
    monkeypatch.delenv("STUDIO_DATA_ROOTS", raising=False)
    monkeypatch.delenv("STUDIO_MODEL_ROOTS", raising=False)
    context = AppContext(data_dir)
    yield context
    context.close()


def test_a_preview_caps_completions_times_new_tokens():
    big = PreviewRequest(
        "default", "", {}, num_prompts=64, samples_per_prompt=8, max_new_tokens=2048
    )
    with pytest.raises(PreviewError, match=r"512 completions x 2048 new tokens .* at most 131,072"):
        big.check()
    PreviewRequest(
        "default", "", {}, num_prompts=64, samples_per_prompt=8, max_new_tokens=256
    ).check()


def test_a_preview_reads_no_server_file_and_loads_no_server_folder(ctx, tmp_path):
    secret = tmp_path / "users.csv"
    secret.write_text("prompt,answer\nalice,hunter2\n", encoding="utf-8")
    with pytest.raises(PreviewError, match="must be a file you uploaded here") as err:
        load_prompts({"source": "file", "path": str(secret), "split": "all"}, 4, ctx.input_policy)
    assert err.value.field == "data" and "hunter2" not in str(err.value)
    with pytest.raises(PreviewError, match="not loadable from the web") as err:
        resolve_model(ctx, "custom", str(tmp_path))
    assert err.value.field == "model"
