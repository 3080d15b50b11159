"""An uploaded data file is checked as it arrives, and errors name it as the user named it."""

from pathlib import Path

import pytest

from engine.data.datasets import DatasetError
from engine.data.files import FileLimits, read_file
from engine.fields import ConfigError
from ui.shared.upload_check import as_uploaded, check_upload, upload_named

BROKEN = 'prompt,answer\n"1+1?",2\n"2+2?",4,extra,fields\n'


@pytest.fixture
def broken(tmp_path) -> Path:
    path = tmp_path / "upload-dir" / "broken.csv"  # Gradio's copy keeps the uploaded name
    path.parent.mkdir()
    path.write_text(BROKEN, encoding="utf-8")
    return path


def test_a_broken_csv_is_reported_at_upload_by_its_own_name(broken, tmp_path):
    line = check_upload(str(broken)).replace("\\", "")  # as shown: Markdown escapes undone
    assert "'broken.csv' is not readable CSV: row 1 has 4 fields, the header 2" in line
    assert "C error" not in line and "▲" in line
    good = tmp_path / "good.jsonl"
    good.write_text('{"question": "1+1?", "solution": "2"}\n', encoding="utf-8")
    assert (
        check_upload(str(good))
        .replace("\\", "")
        .endswith("good.jsonl: the first 1 rows read; columns: question, solution")
    )
    assert check_upload(None) == ""  # a removed file clears the previous file's line


def test_errors_about_the_stored_copy_name_the_upload(ctx, broken):
    stored = ctx.policy_for("local", False).store_upload(broken)
    assert stored.name != "broken.csv"
    with pytest.raises(DatasetError) as caught:
        read_file(stored, FileLimits(10**6, None))
    assert stored.name in str(caught.value)
    shown = as_uploaded(str(caught.value), str(broken))
    assert stored.name not in shown and "'broken.csv' is not readable CSV" in shown
    named = upload_named(ConfigError("data.path", str(caught.value)), str(broken))
    assert (named.field, "broken.csv" in named.reason) == ("data.path", True)
    other = ConfigError("training.steps", "bad")
    assert upload_named(other, str(broken)) is other
    assert as_uploaded("no upload", None) == "no upload"
