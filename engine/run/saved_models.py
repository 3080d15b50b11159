"""The models of one run: where it started, its checkpoints, its final model.

A run folder holds ``final/`` once it completes: full weights for a full fine-tune, the LoRA
adapter and a pointer to its base for a LoRA run (:mod:`engine.models.adapters`; runs saved
before issue 42 hold full merged weights there, which load as any full model), and
``checkpoint-<step>/`` folders on the way: full weights, or a LoRA adapter
(``adapter_config.json``) for a LoRA run; PPO keeps its policy in ``checkpoint-<step>/policy/``.
:func:`load_run_model` turns any of them into a plain transformers model, merging an adapter into
its base (peft ``merge_and_unload``), so the Playground, ``generate`` and the exports all read
models the same way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.models.specs import ModelSpec
from engine.runtime.checkpoints import checkpoints
from engine.runtime.layout import POLICY_DIR, final_model_dir
from storage.paths import db_path
from storage.runs import get_run
from storage.sqlite.db import Database

logger = logging.getLogger(__name__)

BASE = "base"
FINAL = "final"
ADAPTER_CONFIG = "adapter_config.json"


class RunModelError(ValueError):
    """The run has no such model; the message names what it has."""


def recorded_config(data_dir: Path, run_id: str) -> RunConfig | None:
    """The config run ``run_id`` of ``data_dir`` was recorded with: its database row, the run's
    one record of it (the folder's ``config.yaml`` is only its worker's copy); None when there is
    no such run."""
    with Database(db_path(data_dir)) as db:
        run = get_run(db, run_id)
    return None if run is None else RunConfig.from_dict(run.config)


@dataclass(frozen=True)
class RunModel:
    """One model of a run.

    Attributes:
        key: ``"base"``, ``"final"`` or ``"checkpoint-<step>"``.
        label: what the pickers show.
        path: the folder (None for the base: it loads from the run's ``model`` spec).
        step: the training step it was saved at (0 for the base).
    """

    key: str
    label: str
    path: Path | None
    step: int


def run_models(run_dir: Path, config: RunConfig) -> list[RunModel]:
    """The run's starting model, its checkpoints (oldest first) and its final model;
    ``config`` is the run's recorded config (its database row)."""
    run_dir = Path(run_dir)
    out = [RunModel(BASE, f"starting model ({config.model.name_or_path})", None, 0)]
    for path, step in sorted(checkpoints(run_dir).items(), key=lambda item: item[1]):
        out.append(RunModel(path.name, f"checkpoint at step {step}", path, step))
    final = final_model_dir(run_dir)
    if final.is_dir():
        out.append(RunModel(FINAL, "final model", final, config.training.steps))
    return out


def find_run_model(run_dir: Path, key: str, config: RunConfig) -> RunModel:
    """The model ``key`` of the run (``"latest"``: the final model, else the newest
    checkpoint, else the base)."""
    models = run_models(run_dir, config)
    if key == "latest":
        return models[-1]
    for model in models:
        if model.key == key:
            return model
    have = ", ".join(m.key for m in models)
    raise RunModelError(f"the run has no model {key!r}; it has: {have}")


def base_spec(config: RunConfig) -> ModelSpec:
    """The run's starting model, without the adapter the run added, in float32 (CPU-exact)."""
    return replace(config.model, lora=None, load_in_4bit=False, dtype="float32")


def load_run_model(
    run_dir: Path, key: str = "latest", device: str = "cpu", *, config: RunConfig
) -> tuple[Any, Any, RunModel]:
    """``(model, tokenizer, which)``: a plain model (adapters merged), ready to generate."""
    from engine.models.loading import load_model_and_tokenizer

    which = find_run_model(run_dir, key, config)
    if which.path is None:
        model, tokenizer = load_model_and_tokenizer(base_spec(config), device=device)
        return model.eval(), tokenizer, which
    folder = which.path / POLICY_DIR if (which.path / POLICY_DIR).is_dir() else which.path
    if (folder / ADAPTER_CONFIG).is_file():
        from peft import PeftModel

        base, tokenizer = load_model_and_tokenizer(base_spec(config), device=device)
        model = PeftModel.from_pretrained(base, str(folder)).merge_and_unload()
        logger.info("merged the LoRA adapter of %s into %s", folder, config.model.name_or_path)
    else:
        spec = ModelSpec(name_or_path=str(folder), dtype="float32")
        model, tokenizer = load_model_and_tokenizer(spec, device=device)
    return model.eval(), tokenizer, which
