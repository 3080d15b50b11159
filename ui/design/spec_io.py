"""Import and export of a reward spec: JSON, YAML, and the standalone TRL reward module."""

from __future__ import annotations

from pathlib import Path

from rewards.errors import RewardSpecError
from rewards.input_guards.structured_text import TextFormatError, load_structured
from rewards.spec import MAX_SPEC_CHARS, RewardSpec
from ui.shared.downloads import write_download

FORMATS = ("json", "yaml")


def spec_text(spec: RewardSpec, fmt: str = "json") -> str:
    """The spec as JSON or YAML text."""
    return spec.to_yaml() if fmt == "yaml" else spec.to_json()


def parse_spec(text: str) -> RewardSpec:
    """A spec from JSON or YAML text
    (:func:`rewards.input_guards.structured_text.load_structured`); a whole run config gives its
    ``reward`` section.

    Raises:
        RewardSpecError: the text is not a mapping, or a field is invalid (named in the error).
    """
    try:
        data = load_structured(text, MAX_SPEC_CHARS)
    except TextFormatError as exc:
        raise RewardSpecError("", str(exc)) from None
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


def export_files(spec: RewardSpec) -> tuple[str, str, str]:
    """Paths of ``reward_spec.json``, ``reward_spec.yaml`` and ``reward_module.py``."""
    from rewards.trl_adapter import export_module

    return (
        write_download(spec_text(spec, "json"), "reward_spec.json"),
        write_download(spec_text(spec, "yaml"), "reward_spec.yaml"),
        write_download(export_module(spec), "reward_module.py"),
    )
