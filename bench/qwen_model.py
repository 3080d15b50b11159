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


# Qwen2.5-0.5B's config.json, layers aside.
QWEN_05B = {
    "vocab_size": VOCAB,
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
}


def build_qwen_05b(folder: Path, layers: int, words: Iterable[str]) -> None:
    """Save the model (``layers`` decoder layers, bfloat16) and its tokenizer, whose first
    entries are the specials and ``words``, into ``folder``."""
    build_qwen(folder, words, {**QWEN_05B, "num_hidden_layers": layers})


def build_qwen(
    folder: Path, words: Iterable[str], shape: dict, *, init_in_bf16: bool = False
) -> int:
    """Save a random-init Qwen2 of ``shape`` (Qwen2Config fields) in bfloat16 and its word-level
    tokenizer (the specials, ``words``, then ``w<id>`` up to the vocabulary) into ``folder``;
    returns its parameter count. On a GPU when there is one; ``init_in_bf16`` initialises the
    weights in bfloat16 directly (half the memory of float32 then a cast: for shapes of several
    billion parameters)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    vocab_size = shape["vocab_size"]
    vocab = {tok: i for i, tok in enumerate(SPECIALS + sorted(set(words)))}
    vocab.update({f"w{i}": i for i in range(len(vocab), vocab_size)})
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
    config = Qwen2Config(
        **shape,
        max_position_embeddings=32768,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    default_dtype = torch.get_default_dtype()
    try:
        if init_in_bf16:
            torch.set_default_dtype(torch.bfloat16)
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    finally:
        torch.set_default_dtype(default_dtype)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    parameters = sum(p.numel() for p in model.parameters())
    logger.info("model: %.0fM parameters", parameters / 1e6)
    return parameters
