"""A TRL trainer of ours on the shipped default model, as the worker builds one, for the tests
that look inside a step."""

from __future__ import annotations

from typing import Any

from datasets import Dataset

from engine.config.run_config import RunConfig
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks import builtin_task
from engine.trainers.trl.build import build_trl_trainer


def default_model_trainer(
    config: RunConfig, output_dir: Any, prompts: int = 8, callbacks: list | None = None
) -> Any:
    """``config``'s trainer on the default model (loaded afresh: a test may change its weights)
    and ``prompts`` rows of the built-in task, writing into ``output_dir``."""
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    rows = Dataset.from_list(builtin_task(0).train_rows(prompts))
    return build_trl_trainer(config, model, tokenizer, rows, str(output_dir), callbacks or [])
