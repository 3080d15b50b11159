"""Rows of token ids to text in one call to the tokenizer's Rust library.

TRL turns a step's completions into text with ``tokenizer.batch_decode``; so do our PPO rollout
and previews. For a list of lists, transformers 5 first walks every id in Python twice
(``to_py_obj`` checks each is a number, in ``batch_decode`` and again in ``decode``), then
decodes row by row: 48 ms of a 1.33 s GRPO step at 256 completions x 256 tokens on one H100
(``bench/step_phases.py``). The ``tokenizers`` library's ``decode_batch`` decodes all rows in one
call, in parallel, so a fast tokenizer uses it where the result is identical: no clean-up of
tokenization spaces (which transformers applies in Python after decoding), no extra arguments.
"""

from __future__ import annotations

import functools
from typing import Any


def _decode_rows(
    tokenizer: Any,
    original: Any,
    sequences: Any,
    skip_special_tokens: bool = False,
    clean_up_tokenization_spaces: bool | None = None,
    **kwargs: Any,
) -> list[str]:
    cleanup = clean_up_tokenization_spaces
    if cleanup is None:
        cleanup = tokenizer.clean_up_tokenization_spaces
    if hasattr(sequences, "tolist"):  # a tensor or an array of ids
        sequences = sequences.tolist()
    rows = isinstance(sequences, list | tuple) and all(
        isinstance(row, list | tuple) for row in sequences
    )
    if rows and not cleanup and not kwargs:
        try:
            return tokenizer.backend_tokenizer.decode_batch(
                sequences, skip_special_tokens=skip_special_tokens
            )
        except TypeError:  # ids that are not plain integers: transformers converts them
            pass
    return original(
        sequences,
        skip_special_tokens=skip_special_tokens,
        clean_up_tokenization_spaces=clean_up_tokenization_spaces,
        **kwargs,
    )


def use_batch_decode_in_rust(tokenizer: Any) -> bool:
    """Route ``tokenizer.batch_decode`` of rows of ids through ``decode_batch`` when the
    tokenizer is backed by the ``tokenizers`` library; returns whether it is."""
    if getattr(tokenizer, "backend_tokenizer", None) is None:
        return False
    original = tokenizer.batch_decode
    if getattr(original, "func", None) is _decode_rows:  # already routed
        return True
    tokenizer.batch_decode = functools.partial(_decode_rows, tokenizer, original)
    return True
