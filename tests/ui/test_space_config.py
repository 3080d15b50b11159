"""The README front matter deploys the repository as a Space as it stands."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def front_matter() -> dict:
    text = (ROOT / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_the_space_runs_the_pinned_gradio_and_python_with_sign_in():
    meta = front_matter()
    pins = (ROOT / "requirements.txt").read_text()
    gradio_pin = re.search(r"^gradio(?:\[[a-z,]+\])?==(\S+)$", pins, re.MULTILINE).group(1)
    assert (meta["sdk"], str(meta["sdk_version"])) == ("gradio", gradio_pin)
    assert str(meta["python_version"]) == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert meta["hf_oauth"] is True
    assert meta["app_file"] == "app.py"
