"""The benchmarks' model: a random-init Qwen2 of Qwen2.5-0.5B's shape with a word-level tokenizer.

Nothing is downloaded; time and memory depend on the shape, not on the weights. The tokenizer
decodes every id (words past the given ones are ``w<id>``), so sampled text round-trips.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

VOCAB = 151_936
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "[UNK]"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> "
    "{% endfor %}{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


def build_qwen_05b(folder: Path, layers: int, words: Iterable[str]) -> None:
    """Save the model (``layers`` decoder layers, bfloat16) and its tokenizer, whose first
    entries are the specials and ``words``, into ``folder``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    vocab = {tok: i for i, tok in enumerate(SPECIALS + sorted(set(words)))}
    vocab.update({f"w{i}": i for i in range(len(vocab), VOCAB)})
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="[UNK]",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    eos, pad = vocab["<|im_end|>"], vocab["<|endoftext|>"]
    config = Qwen2Config(  # Qwen2.5-0.5B's config.json, layers aside
        vocab_size=VOCAB,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=layers,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    logger.info("model: %.0fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
