"""Import and export of a reward spec: JSON, YAML, and the standalone TRL reward module."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from rewards.errors import RewardSpecError
from rewards.params import MAX_NESTING, too_deep
from rewards.spec import RewardSpec

FORMATS = ("json", "yaml")
MAX_IMPORT_BYTES = 1_000_000


def spec_text(spec: RewardSpec, fmt: str = "json") -> str:
    """The spec as JSON or YAML text."""
    return spec.to_yaml() if fmt == "yaml" else spec.to_json()


def load_text(text: str) -> Any:
    """JSON or YAML text as data; JSON is tried first, since a YAML 1.1 parser reads the JSON
    number ``1e-06`` as a string. Raises ``yaml.YAMLError`` when neither parses."""
    if too_deep(text):
        raise yaml.YAMLError(f"the text nests lists or mappings deeper than {MAX_NESTING} levels")
    try:
        try:
            return json.loads(text)
        except ValueError:
            return yaml.safe_load(text)
    except RecursionError:  # "[" * 100000: deeper than either parser can follow
        raise yaml.YAMLError("the text nests lists or mappings too deeply") from None
    except ValueError:  # YAML's reading of an integer over Python's 4,300-digit limit
        raise yaml.YAMLError("the text holds a number with too many digits") from None


def parse_spec(text: str) -> RewardSpec:
    """A spec from JSON or YAML text (see :func:`load_text`).

    Raises:
        RewardSpecError: the text is not a mapping, or a field is invalid (named in the error).
    """
    if len(text.encode("utf-8", errors="replace")) > MAX_IMPORT_BYTES:
        raise RewardSpecError("", f"the spec is over {MAX_IMPORT_BYTES:,} bytes; is it a spec?")
    try:
        data = load_text(text)
    except yaml.YAMLError as exc:
        raise RewardSpecError("", f"not valid JSON or YAML: {exc}") from None
    if isinstance(data, dict) and "reward" in data and "components" not in data:
        data = data["reward"]  # a whole run config: take its reward section
    if not isinstance(data, dict):
        raise RewardSpecError("", "a spec is a mapping with a 'components' list")
    return RewardSpec.from_dict(data)


def read_spec_file(path: str | Path) -> RewardSpec:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RewardSpecError("", f"{path.name} is not UTF-8 text") from None
    return parse_spec(text)


def write_download(text: str, file_name: str) -> str:
    """Write ``text`` to a fresh temporary file called ``file_name`` and return its path."""
    folder = Path(tempfile.mkdtemp(prefix="studio-export-"))
    path = folder / file_name
    path.write_text(text, encoding="utf-8")
    return str(path)


def export_files(spec: RewardSpec) -> tuple[str, str, str]:
    """Paths of ``reward_spec.json``, ``reward_spec.yaml`` and ``reward_module.py``."""
    from rewards.trl_adapter import export_module

    return (
        write_download(spec_text(spec, "json"), "reward_spec.json"),
        write_download(spec_text(spec, "yaml"), "reward_spec.yaml"),
        write_download(export_module(spec), "reward_module.py"),
    )
