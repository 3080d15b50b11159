"""``batch_decode`` routed through the tokenizers library gives what transformers gives."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import AutoTokenizer

from engine.models.batch_decode import _decode_rows, use_batch_decode_in_rust
from engine.models.loading import load_tokenizer
from engine.models.specs import ModelSpec


def _rows(vocab_size: int, specials: list[int], seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    rows = [[rng.randrange(vocab_size) for _ in range(rng.randrange(1, 40))] for _ in range(30)]
    rows.append([])  # a completion cut at once
    rows.append(specials + rows[0] + specials)
    return rows


def _transformers_decode(tokenizer, rows, **kwargs) -> list[str]:
    return [type(tokenizer).decode(tokenizer, row, **kwargs) for row in rows]


@pytest.fixture(scope="module")
def default_tokenizer():
    return load_tokenizer(ModelSpec())


def test_loaded_tokenizers_are_routed(default_tokenizer):
    assert default_tokenizer.batch_decode.func is _decode_rows
    assert use_batch_decode_in_rust(default_tokenizer)
    original = default_tokenizer.batch_decode.args[1]
    assert original.__func__ is type(default_tokenizer).batch_decode  # routed once, not twice


@pytest.mark.parametrize("skip", [True, False])
def test_default_tokenizer_decodes_as_transformers_does(default_tokenizer, skip):
    tok = default_tokenizer
    rows = _rows(len(tok), tok.all_special_ids)
    expected = _transformers_decode(tok, rows, skip_special_tokens=skip)
    assert tok.batch_decode(rows, skip_special_tokens=skip) == expected
    # tensors and arrays of ids, as TRL and the trainers hand them over
    square = torch.tensor([row[:5] for row in rows if len(row) >= 5])
    assert tok.batch_decode(square, skip_special_tokens=skip) == _transformers_decode(
        tok, square.tolist(), skip_special_tokens=skip
    )
    assert tok.batch_decode(square.numpy(), skip_special_tokens=skip) == tok.batch_decode(
        square, skip_special_tokens=skip
    )


def test_clean_up_and_odd_inputs_keep_transformers_path(tmp_path):
    """Where transformers post-processes in Python or converts ids itself, it still does."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "hello": 1, ",": 2, "world": 3, "!": 4, "it": 5, "'s": 6}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="[UNK]", clean_up_tokenization_spaces=True
    ).save_pretrained(tmp_path)
    tok = AutoTokenizer.from_pretrained(tmp_path)
    use_batch_decode_in_rust(tok)
    rows = [[1, 2, 3, 4], [5, 6]]
    expected = _transformers_decode(tok, rows)
    assert expected == ["hello, world!", "it's"]  # cleaned: no space before , ! 's
    assert tok.batch_decode(rows) == expected
    raw = tok.batch_decode(rows, clean_up_tokenization_spaces=False)
    assert raw == _transformers_decode(tok, rows, clean_up_tokenization_spaces=False)
    assert raw[0] == "hello , world !"
    # numpy integers inside Python lists: the Rust call refuses them, transformers converts
    import numpy as np

    assert tok.batch_decode([[np.int64(1), np.int64(3)]]) == ["hello world"]


def test_gguf_tokenizer_decodes_as_transformers_does(english_model):
    _, tok = english_model
    rows = _rows(len(tok), tok.all_special_ids, seed=1)
    assert tok.batch_decode(rows, skip_special_tokens=True) == _transformers_decode(
        tok, rows, skip_special_tokens=True
    )
