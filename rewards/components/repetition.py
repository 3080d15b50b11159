"""Repetition: a penalty for repeated n-grams.

Reference: "Demystifying Long Chain-of-Thought Reasoning" (Yeo et al. 2025, App. C.2); open-r1
``get_repetition_penalty_reward`` (word n-grams) and TRL
``trl.rewards.get_repetition_penalty_reward`` (token n-grams):
``(1 - unique_ngrams / total_ngrams) * max_penalty``, and 0 for texts shorter than ``n``.

``unit="words"`` (default) uses lower-cased words, exactly open-r1: split at whitespace
(``split="whitespace"``, open-r1 ``language="en"``), or by jieba's Chinese word segmenter
(``split="jieba"``, open-r1 ``language="zh"``: ``list(jieba.cut(text))``), or into characters
with whitespace removed (``split="characters"``, for Japanese, which has no spaces and whose
segmenters need a dictionary we do not ship; a departure from open-r1, which has no Japanese).
``unit="tokens"`` uses ``completion_ids``, exactly TRL; without ids the sample is not scored
(``None``), since a guess at tokens would change the number silently.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults

PARAMS = (
    ParamSpec("n", "int", 3, "n-gram size", min=1, max=20),
    ParamSpec("max_penalty", "float", -1.0, "score of a fully repetitive text", min=-10.0, max=0.0),
    ParamSpec(
        "split",
        "str",
        "whitespace",
        "how words are found: whitespace, jieba (Chinese), characters (Japanese)",
        choices=("whitespace", "jieba", "characters"),
    ),
    ParamSpec(
        "unit", "str", "words", "n-grams of words or of token ids", choices=("words", "tokens")
    ),
)

_GRAM_NAMES = {1: "words", 2: "bigrams", 3: "trigrams", 4: "4-grams"}


def split_words(text: str, split: str) -> list[str]:
    """``text`` lower-cased and split into words the way ``split`` names (module docstring)."""
    text = text.lower()
    if split == "jieba":
        import jieba

        jieba.setLogLevel(logging.WARNING)  # it logs its dictionary loading at INFO
        return list(jieba.cut(text))
    if split == "characters":
        return [c for c in text if not c.isspace()]
    return text.split()


def repeated_fraction(items: Sequence, n: int) -> float | None:
    """``1 - unique/total`` over the n-grams of ``items``; ``None`` when there are fewer than n."""
    if len(items) < n:
        return None
    grams = list(zip(*[items[i:] for i in range(n)], strict=False))
    return 1 - len(set(grams)) / len(grams)


class Repetition(RewardComponent):
    component = "repetition"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.split = p["split"]
        self.n = p["n"]
        self.max_penalty = p["max_penalty"]
        self.unit = p["unit"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        gram = _GRAM_NAMES.get(self.n, f"{self.n}-grams")
        if self.unit == "tokens":
            if ctx.completion_ids is None:
                return [Judgement(None, "token n-grams need completion_ids") for _ in texts]
            sequences: list[Sequence] = [list(ids) for ids in ctx.completion_ids]
            gram = "token " + gram
        else:
            sequences = [split_words(text, self.split) for text in texts]
        out = []
        for seq in sequences:
            fraction = repeated_fraction(seq, self.n)
            if fraction is None:
                out.append(Judgement(0.0, f"shorter than {self.n} {self.unit}: no penalty"))
                continue
            value = fraction * self.max_penalty if fraction else 0.0
            out.append(Judgement(value, f"{fraction:.0%} repeated {gram}"))
        return out


INFO = ComponentInfo(
    name="repetition",
    factory=Repetition,
    params=PARAMS,
    description="Penalises repeated n-grams: (1 - unique/total) * max_penalty.",
    source=(
        "Yeo et al. 2025 'Demystifying Long CoT' App. C.2; open-r1 and TRL "
        "get_repetition_penalty_reward"
    ),
)
