"""Conciseness: length shaping, correctness-aware (cosine) or overlong-only (DAPO).

``mode="cosine"``: Kimi 1.5 / "Demystifying Long Chain-of-Thought Reasoning" (Yeo et al. 2025,
App. C.1), as in TRL ``trl.rewards.get_cosine_scaled_reward``:
``progress = min(length / max_len, 1)``, ``r = lo + 0.5 * (hi - lo) * (1 + cos(pi * progress))``
with ``(lo, hi) = (min_value_correct, max_value_correct)`` for a correct answer and the swapped
pair ``(max_value_wrong, min_value_wrong)`` for a wrong one: short right answers earn most,
short wrong ones are punished most. Correctness is judged as the ``correctness`` component does
(same extraction and modes); no usable gold means not scored (``None``), as in TRL.

``mode="overlong"``: DAPO's soft overlong punishment (Yu et al. 2025, Eq. 13; TRL
``get_soft_overlong_punishment``): 0 up to ``max_len - cache``, then linear down to -1 at
``max_len``, and -1 beyond.

Length unit: ``tokens`` (as the references) counts ``completion_ids``; without ids the sample
is not scored (``None``, "needs completion_ids") rather than guessed. ``characters`` and
``words`` (whitespace-separated) need no tokenizer, so they also work on edited text.
"""

from __future__ import annotations

import math
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.components.correctness import default_verdicts
from rewards.params import ComponentInfo, ParamSpec, with_defaults
from rewards.verification.verify import MODES

PARAMS = (
    ParamSpec("mode", "str", "cosine", "length shaping formula", choices=("cosine", "overlong")),
    ParamSpec(
        "unit", "str", "tokens", "how length is counted", choices=("tokens", "characters", "words")
    ),
    ParamSpec("max_len", "int", 1000, "length at which the schedule ends", min=1, max=1_000_000),
    ParamSpec(
        "cache", "int", 200, "overlong mode: length of the penalty ramp", min=0, max=1_000_000
    ),
    ParamSpec("min_value_wrong", "float", -1.0, "wrong answer, shortest", min=-10.0, max=10.0),
    ParamSpec("max_value_wrong", "float", -0.5, "wrong answer, at max_len", min=-10.0, max=10.0),
    ParamSpec("min_value_correct", "float", 0.5, "right answer, at max_len", min=-10.0, max=10.0),
    ParamSpec("max_value_correct", "float", 1.0, "right answer, shortest", min=-10.0, max=10.0),
    ParamSpec(
        "correctness_mode", "str", "math", "cosine mode: how answers are compared", choices=MODES
    ),
    ParamSpec(
        "gold_column", "str", "answer", "dataset column holding the gold answer", max_length=64
    ),
    ParamSpec("answer_tag", "str", "answer", "tag around the final answer", max_length=32),
)


def completion_lengths(texts: list[str], ctx: BatchContext, unit: str) -> list[int] | None:
    """Each completion's length in ``unit``; ``None`` for tokens without ``completion_ids``."""
    if unit == "tokens":
        if ctx.completion_ids is None:
            return None
        return [len(ids) for ids in ctx.completion_ids]
    if unit == "words":
        return [len(t.split()) for t in texts]
    return [len(t) for t in texts]


def cosine_scaled(length: int, max_len: int, lo: float, hi: float) -> float:
    """``lo + 0.5 * (hi - lo) * (1 + cos(pi * min(length / max_len, 1)))`` (Kimi 1.5)."""
    progress = min(length / max_len, 1.0)
    return float(lo + 0.5 * (hi - lo) * (1.0 + math.cos(progress * math.pi)))


def soft_overlong(length: int, max_len: int, cache: int) -> float:
    """DAPO Eq. 13: 0, then linear to -1 over the last ``cache`` units, then -1."""
    if length <= max_len - cache:
        return 0.0
    if length <= max_len:
        return (max_len - cache - length) / cache
    return -1.0


class Conciseness(RewardComponent):
    component = "conciseness"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.mode = p["mode"]
        self.unit = p["unit"]
        self.max_len = p["max_len"]
        self.cache = p["cache"]
        # (lo, hi) of a wrong answer: the pair swapped, see the module docstring
        self.wrong = (p["max_value_wrong"], p["min_value_wrong"])
        self.correct = (p["min_value_correct"], p["max_value_correct"])
        self.correctness_mode = p["correctness_mode"]
        self.gold_column = p["gold_column"]
        self.answer_tag = p["answer_tag"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        lengths = completion_lengths(texts, ctx, self.unit)
        if lengths is None:
            return [Judgement(None, "length in tokens needs completion_ids") for _ in texts]
        unit = self.unit
        if self.mode == "overlong":
            out = []
            for n in lengths:
                value = soft_overlong(n, self.max_len, self.cache)
                if n <= self.max_len - self.cache:
                    note = f"{n} {unit}, under {self.max_len - self.cache}: no penalty"
                elif n <= self.max_len:
                    into = n - (self.max_len - self.cache)
                    note = f"{n} {unit}, {into} into the {self.cache}-{unit} ramp"
                else:
                    note = f"{n} {unit}, over {self.max_len}"
                out.append(Judgement(value, note))
            return out
        found = default_verdicts(
            texts, ctx, self.correctness_mode, self.gold_column, self.answer_tag
        )
        out = []
        for n, verdict in zip(lengths, found, strict=True):
            if verdict.correct is None:
                out.append(Judgement(None, verdict.explanation))
                continue
            lo, hi = self.correct if verdict.correct else self.wrong
            word = "right" if verdict.correct else "wrong"
            out.append(
                Judgement(
                    cosine_scaled(n, self.max_len, lo, hi),
                    f"{word} answer, {n} of {self.max_len} {unit}",
                )
            )
        return out


def _check(params: dict[str, Any]) -> None:
    from rewards.errors import RewardSpecError

    if params["mode"] != "overlong":
        return
    if params["cache"] > params["max_len"]:
        raise RewardSpecError(
            "cache", f"must be at most max_len ({params['max_len']}), got {params['cache']}"
        )
    if params["cache"] == 0:
        raise RewardSpecError("cache", "must be at least 1 in overlong mode, got 0")


INFO = ComponentInfo(
    name="conciseness",
    factory=Conciseness,
    params=PARAMS,
    description=(
        "Length shaping: cosine-scaled by correctness (short right answers earn most) or "
        "DAPO's soft overlong punishment."
    ),
    source=(
        "Kimi 1.5; Yeo et al. 2025 App. C.1 (TRL get_cosine_scaled_reward); DAPO Eq. 13 "
        "(TRL get_soft_overlong_punishment)"
    ),
    allow_multiple=True,
    check=_check,
)
