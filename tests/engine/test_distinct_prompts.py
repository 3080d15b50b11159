"""A step's prompts are rendered and tokenized once each, in real GRPO and RLOO trainers, and
every completion still gets exactly the ids TRL's own tokenizing gives it."""

from __future__ import annotations

import pytest
from trl import GRPOTrainer, RLOOTrainer

from engine.config.run_config import RunConfig
from engine.tasks import builtin_task
from engine.trainers.trl.prompt_tokens import prompt_key
from tests.default_trainer import default_model_trainer

TRL_CLASSES = {"grpo": GRPOTrainer, "rloo": RLOOTrainer}


def _trainer(algorithm: str, tmp_path):
    config = RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "generation": {"num_generations": 4, "max_completion_length": 8},
            "training": {"steps": 1, "prompts_per_step": 3, "save_steps": 0, "eval_samples": 0},
        }
    )
    trainer = default_model_trainer(config, tmp_path, prompts=6)
    return trainer, [row["prompt"] for row in builtin_task(0).train_rows(6)]


@pytest.mark.parametrize("algorithm", ["grpo", "rloo"])
def test_each_distinct_prompt_is_tokenized_once_with_trls_ids(algorithm, tmp_path, monkeypatch):
    trainer, prompts = _trainer(algorithm, tmp_path)
    batch = [p for p in prompts[:3] for _ in range(4)]  # as TRL's sampler repeats a group
    expected = TRL_CLASSES[algorithm]._tokenize_prompts(trainer, batch)[0]
    rendered = []
    render = trainer.processing_class.apply_chat_template
    monkeypatch.setattr(
        trainer.processing_class,
        "apply_chat_template",
        lambda conversation, **kw: rendered.append(len(conversation)) or render(conversation, **kw),
    )
    ids, images, fields = trainer._tokenize_prompts(batch)
    assert rendered == [3]  # one batch of the three distinct prompts
    assert ids == [list(row) for row in expected] and images is None and fields == {}
    ids[0].append(7)  # each completion's ids are its own (a tool loop extends them)
    assert ids[1] == list(expected[1])


def test_prompts_of_other_kinds_have_no_key():
    chat = [{"role": "user", "content": "What is 2 + 2?"}]
    assert prompt_key(chat) == prompt_key([dict(chat[0])]) and prompt_key("2 + 2") == "2 + 2"
    image = [{"role": "user", "content": [{"type": "image", "image": "x.png"}]}]
    assert prompt_key(image) is None and prompt_key(None) is None
