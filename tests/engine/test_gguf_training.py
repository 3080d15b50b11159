"""The optional GGUF English model trains (its weights are dequantised on load)."""

from __future__ import annotations

import copy

import pytest
from datasets import Dataset

from engine.config.run_config import RunConfig
from engine.data.prompts import for_trainer
from engine.models.loading import apply_lora
from engine.models.specs import ENGLISH_MODEL_ALIAS
from engine.tasks import builtin_task
from engine.trainers.trl.build import build_trl_trainer

pytestmark = pytest.mark.slow


def test_gguf_model_takes_a_grpo_step_with_lora(tmp_path, english_model):
    """LoRA, as the form suggests for a pretrained model; a full fine-tune takes the same path
    (both were refused while the model still carried its GGUF quantizer)."""
    config = RunConfig.from_dict(
        {
            "model": {"name_or_path": ENGLISH_MODEL_ALIAS, "lora": {"r": 4, "alpha": 8}},
            "generation": {"num_generations": 2, "max_completion_length": 4},
            "training": {"steps": 1, "prompts_per_step": 1, "save_steps": 0, "learning_rate": 1e-3},
        }
    )
    base, tokenizer = english_model  # loaded as load_model_and_tokenizer(config.model) does,
    model = apply_lora(copy.deepcopy(base), config.model.lora)  # then its LoRA on a copy
    rows = for_trainer(tokenizer, builtin_task(0).train_rows(4))
    trainer = build_trl_trainer(
        config, model, tokenizer, Dataset.from_list(rows), str(tmp_path), callbacks=[]
    )
    trainer.train()  # refused before: "quantized with QuantizationMethod.GGUF ..."
    assert trainer.state.global_step == 1
    logged = trainer.state.log_history[0]
    assert "loss" in logged and "reward" in logged
