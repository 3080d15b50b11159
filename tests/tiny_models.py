"""Tiny random models for tests: seconds to build, nothing downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerBase

#: A decoder small enough for CPU tests with the features that matter: several layers and
#: grouped-query attention (4 query heads share 2 key-value heads).
TINY_SHAPE: dict[str, Any] = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
)


def _llama_config(tokenizer: PreTrainedTokenizerBase, **extra: Any) -> LlamaConfig:
    """The 2-layer Llama shape of the saved tiny models, sized to ``tokenizer``."""
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


def save_tiny_llama(path: Path, tokenizer: PreTrainedTokenizerBase) -> Path:
    """A seeded random 2-layer Llama sized to ``tokenizer``'s vocabulary, saved with it in
    ``path`` (a model dir that ``load_model_and_tokenizer`` reads like a hub checkpoint)."""
    torch.manual_seed(0)
    config = _llama_config(tokenizer, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def save_tiny_reward_model(path: Path, tokenizer: PreTrainedTokenizerBase) -> Path:
    """A seeded random 2-layer Llama reward model (one-label sequence classification, saved
    as safetensors) sized to ``tokenizer``, saved with it in ``path``."""
    from transformers import LlamaForSequenceClassification

    torch.manual_seed(0)
    model = LlamaForSequenceClassification(_llama_config(tokenizer, num_labels=1))
    with torch.no_grad():  # a readable spread of scores instead of near-zero logits
        model.score.weight.normal_(0, 2.0)
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path
