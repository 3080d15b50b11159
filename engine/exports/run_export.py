"""Exporting a run's model in a format other tools load.

Formats (``FORMATS``):

- ``hf``: the model folder as training saved it (full weights, or a LoRA run's adapter with
  ``base_model.json``), without optimizer and trainer state;
- ``merged``: a plain transformers model: a LoRA adapter merged into its base (peft
  ``merge_and_unload``), saved with its tokenizer and generation config;
- ``gguf``: the merged model as one GGUF file (:mod:`engine.exports.gguf_file`), F16 or Q8_0;
- ``ollama``: the GGUF, a ``Modelfile`` (:mod:`engine.exports.ollama`) and the command to run.

Each writes a model card, ``README.md`` (:mod:`engine.exports.model_card`).
"""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config.run_config import RunConfig
from engine.exports.gguf_file import QUANTS, write_gguf
from engine.exports.model_card import HELDOUT_METRICS, before_after, model_card
from engine.exports.ollama import modelfile, run_command
from engine.run.saved_models import (
    FINAL,
    RunModelError,
    find_run_model,
    load_run_model,
)

if TYPE_CHECKING:
    from storage.sqlite.db import Database

logger = logging.getLogger(__name__)

FORMATS = ("hf", "merged", "gguf", "ollama")
CARD_FILE = "README.md"
#: Files of a checkpoint that belong to training, not to the model.
TRAINING_STATE = (
    "optimizer.pt",
    "scheduler.pt",
    "rng_state*.pth",
    "trainer_state.json",
    "training_args.bin",
    "value_head*",
    "ppo_state*",
)


class ExportError(ValueError):
    """The export cannot be done as asked; the message names the argument."""


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote.

    Attributes:
        folder: the output folder.
        files: the files in it, relative names.
        command: the command that runs it (Ollama), else empty.
    """

    folder: Path
    files: list[str]
    command: str = ""


def ollama_name(text: str) -> str:
    """A model name Ollama accepts: lower-case letters, digits, ``-``, ``_`` and ``.``."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return name[:60] or "studio-model"


def export_model(
    run_dir: Path,
    out: Path,
    fmt: str,
    *,
    run_id: str,
    config: RunConfig,
    heldout_series: dict | None = None,
    trained_steps: int | None = None,
    quant: str = "F16",
    model_key: str = "latest",
) -> ExportResult:
    """Write the run's model ``model_key`` (``latest``: final, else newest checkpoint) to
    ``out`` in ``fmt``. ``config``: the run's recorded config; ``heldout_series``:
    ``{metric: (steps, values)}`` for the card."""
    if fmt not in FORMATS:
        raise ExportError(f"format: must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if quant not in QUANTS:
        raise ExportError(f"quant: must be one of {', '.join(QUANTS)}, got {quant!r}")
    run_dir, out = Path(run_dir), Path(out)
    try:
        which = find_run_model(run_dir, model_key, config)
    except RunModelError as exc:
        raise ExportError(f"model: {exc}") from None
    out.mkdir(parents=True, exist_ok=True)
    command = ""
    if fmt == "hf" and which.path is not None:
        shutil.copytree(
            which.path, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*TRAINING_STATE)
        )
    else:  # the base model has no folder of the run: "hf" writes it merged too
        model, tokenizer, _ = load_run_model(run_dir, which.key, config=config)
        if fmt in ("hf", "merged"):
            model.save_pretrained(out)
            tokenizer.save_pretrained(out)
            if model.generation_config is not None:
                model.generation_config.save_pretrained(out)
        else:
            name = ollama_name(config.name or run_id)
            gguf_name = f"{name}-{quant}.gguf"
            write_gguf(model, tokenizer, out / gguf_name, quant)
            if fmt == "ollama":
                (out / "Modelfile").write_text(modelfile(gguf_name, tokenizer), encoding="utf-8")
                command = run_command(name)
    files = sorted(p.name for p in out.iterdir() if p.name != CARD_FILE)
    card = model_card(
        config,
        run_id=run_id,
        model_label=which.label,
        trained_steps=trained_steps if which.key == FINAL and trained_steps else which.step,
        heldout=before_after(heldout_series or {}),
        export_format=fmt + (f" ({quant})" if fmt in ("gguf", "ollama") else ""),
        files=files,
    )
    if command:
        card += f"\n## Run it with Ollama\n\nIn this folder:\n\n```\n{command}\n```\n"
    (out / CARD_FILE).write_text(card, encoding="utf-8")
    logger.info("exported %s (%s) as %s to %s", run_id, which.key, fmt, out)
    return ExportResult(out, sorted([*files, CARD_FILE]), command)


def export_recorded_run(
    db: Database, run_id: str, run_dir: Path, out: Path, fmt: str, **kwargs: Any
) -> ExportResult:
    """:func:`export_model` with the card's steps and held-out scores read from storage."""
    from storage.records.metrics import metric_series
    from storage.runs import get_run

    run = get_run(db, run_id)
    if run is None:
        raise ExportError(f"run: no run with id {run_id!r}")
    series = {}
    for name in HELDOUT_METRICS:
        found = metric_series(db, [run_id], name)[run_id]
        series[name] = (found.steps, found.values)
    return export_model(
        run_dir,
        out,
        fmt,
        run_id=run_id,
        config=RunConfig.from_dict(run.config),
        heldout_series=series,
        trained_steps=run.last_step,
        **kwargs,
    )
