"""The spec's reward functions inside TRL 1.16's real GRPOTrainer and RLOOTrainer."""

import math

import pytest
import torch
from datasets import Dataset

from rewards.composer import score
from rewards.spec import PRESETS, ComponentSpec, RewardSpec
from rewards.trl_adapter import to_trl

SPEC = RewardSpec(
    [
        ComponentSpec("correctness", 1.0),
        ComponentSpec("format", 0.5),
        ComponentSpec("conciseness", 0.2, {"max_len": 50}),
        ComponentSpec("rule", -0.3, {"pattern": "sorry", "effect": "penalty"}),
        ComponentSpec("rule", 0.1, {"pattern": "think", "kind": "must_contain", "effect": "bonus"}),
    ]
)
COMPLETIONS = [
    "<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>",
    "<think>sorry</think><answer>25</answer>",
    "24",
    "nothing here",
]
ANSWERS = ["24", "24", "24", None]


def test_to_trl_names_and_weights():
    funcs, weights = to_trl(SPEC)
    assert [f.__name__ for f in funcs] == ["correctness", "format", "conciseness", "rule", "rule_2"]
    assert weights == [1.0, 0.5, 0.2, -0.3, 0.1]


def test_functions_take_trls_call():
    funcs, _ = to_trl(PRESETS["R1-style math"])
    chat = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    out = funcs[0](
        prompts=[[{"role": "user", "content": "86-62"}]] * 4,
        completions=chat,
        completion_ids=[[1, 2, 3]] * 4,
        answer=ANSWERS,
        difficulty=[1, 2, 3, 4],
        trainer_state=object(),
        log_extra=lambda *a: None,
        log_metric=lambda *a: None,
    )
    assert out == [1.0, 0.0, 1.0, None]


def _tiny_model_and_tokenizer():
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    chars = list("0123456789+-=:;<>/ abcdefghijklmnopqrstuvwxyz")
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{c: i + 3 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config), tokenizer


@pytest.mark.slow
@pytest.mark.parametrize("trainer_kind", ["grpo", "rloo"])
def test_trl_trainers_accept_the_spec_and_agree_with_the_composer(tmp_path, trainer_kind):
    from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

    model, tokenizer = _tiny_model_and_tokenizer()
    funcs, weights = to_trl(SPEC)
    dataset = Dataset.from_dict({"prompt": ["86-62="] * 4, "answer": ["24"] * 4})
    common = dict(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        max_steps=1,
        logging_steps=1,
        use_cpu=True,
        bf16=False,
        report_to="none",
        reward_weights=weights,
        beta=0.0,
        activation_checkpointing=False,
        save_strategy="no",
    )
    config_cls, trainer_cls = (
        (GRPOConfig, GRPOTrainer) if trainer_kind == "grpo" else (RLOOConfig, RLOOTrainer)
    )
    trainer = trainer_cls(
        model=model,
        reward_funcs=funcs,
        args=config_cls(**common),
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    assert trainer.reward_func_names == ["correctness", "format", "conciseness", "rule", "rule_2"]

    # TRL's own reward computation on fixed completions equals the composer's totals.
    inputs = [{"prompt": "86-62=", "answer": a} for a in ANSWERS]
    ids = [tokenizer(c)["input_ids"] for c in COMPLETIONS]
    per_func = trainer._calculate_rewards(inputs, ["86-62="] * 4, COMPLETIONS, ids)
    totals = (per_func * torch.tensor(weights).unsqueeze(0)).nansum(dim=1)
    all_nan = torch.isnan(per_func).all(dim=1)
    ours = score(SPEC, None, COMPLETIONS, answers=ANSWERS, completion_ids=ids)
    for total, nan_row, sample in zip(totals.tolist(), all_nan.tolist(), ours, strict=True):
        if sample.total is None:
            assert nan_row
        else:
            assert math.isclose(total, sample.total, abs_tol=1e-5)

    trainer.train()
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert {"rewards/correctness/mean", "rewards/rule_2/mean", "reward"} <= logged
