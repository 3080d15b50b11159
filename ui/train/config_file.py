"""A run config file brought into the Train form: YAML (or JSON) from ``export-config`` or a
run's own ``config.yaml``, checked whole as the API checks one (the hardened parser, then
``RunConfig.from_dict``), then drawn into the form the way a reload draws the kept form
(:func:`ui.memory.saved.train_values`), so every value also passes its input's own check and
the form's validation runs on the result. No Gradio here.

A data file the config names by path is not read: the path is the server's (or the author's
machine's), and a visitor reads only what they upload; the form asks for the file instead.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.fields import MAX_CONFIG_CHARS, ConfigError, parse_yaml
from engine.models.specs import ModelSpec
from ui.preview.generate import CUSTOM
from ui.train.form import FormField, input_value, values_from_config

WHERE = "config file"


def read_config_file(file: Any) -> RunConfig:
    """The run config in an uploaded file.

    Raises:
        ConfigError: the file is too large, not UTF-8, not a config mapping, or a field is
            bad (the message names it, as ``config file: training.steps: ...``).
    """
    path = Path(getattr(file, "name", file))
    if path.stat().st_size > MAX_CONFIG_CHARS * 4:  # UTF-8: at most 4 bytes a character
        raise ConfigError(WHERE, f"over {MAX_CONFIG_CHARS:,} characters; is it a run config?")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(WHERE, "not UTF-8 text") from None
    try:
        data = parse_yaml(text)
        if not isinstance(data, Mapping) or not data:
            raise ConfigError("", "must be a run config mapping (`python -m engine export-config`)")
        return RunConfig.from_dict(dict(data))
    except ConfigError as exc:
        field = f"{WHERE}: {exc.field}" if exc.field else WHERE
        raise ConfigError(field, exc.reason) from None


def form_record(
    config: RunConfig, fields: Mapping[str, FormField], model_keys: Collection[str]
) -> dict[str, Any]:
    """The Train form's values for ``config``, shaped as the browser keeps the form
    (``{"name", "algorithm", "model", "data", "hyper"}``: see :mod:`ui.memory.saved`)."""
    model, data = config.model, config.data
    known = model.name_or_path in model_keys
    lora = model.lora
    return {
        "name": config.name,
        "algorithm": config.algorithm,
        "model": {
            "key": model.name_or_path if known else CUSTOM,
            "custom": "" if known else model.name_or_path,
            "lora": lora is not None,
            **(
                {"lora_r": lora.r, "lora_alpha": lora.alpha, "lora_layers": lora.last_layers}
                if lora is not None
                else {}
            ),
        },
        "data": _data_record(data),
        "hyper": {
            path: input_value(fields[path], value)
            for path, value in values_from_config(config, list(fields.values())).items()
        },
    }


def not_in_form(config: RunConfig) -> list[str]:
    """The config's settings the form has no input for, where they differ from the default
    (the form cannot carry them: the user is told)."""
    model, default = config.model, ModelSpec()
    left = [
        f"model.{name}"
        for name in ("dtype", "gguf_file")
        if getattr(model, name) != getattr(default, name)
    ]
    if config.data.source == "file" and config.data.path:
        left.append(f"data.path ({Path(config.data.path).name}: upload it)")
    return left


def _data_record(data: Any) -> dict[str, Any]:
    if data.source == "builtin":
        return {"source": "builtin", "task": data.task, "split": data.split}
    columns = {
        "prompt_col": data.prompt_column,
        "answer_col": data.answer_column,
        "system_col": data.system_column or "",
    }
    if data.source == "file":
        return {"source": "file", **columns}
    return {
        "source": "hub",
        "hub_id": data.path or "",
        "hub_config": data.config_name or "",
        "split": data.split,
        **columns,
    }
