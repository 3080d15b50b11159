"""Relative length: Kimi 1.5's batch-relative length reward (``len_reward``).

Reference: Kimi Team, "Kimi k1.5: Scaling Reinforcement Learning with LLMs" (arXiv 2501.12599,
§2.3.3 "Length Penalty"); open-r1 ``len_reward``. Over a set of responses with lengths
``len_i``, ``lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len)``; a correct response
earns ``lambda_i``, a wrong one ``min(0, lambda_i)``; when all lengths are equal every response
gets 0. Lengths are characters by default, as in open-r1.

Departures: the set is the whole batch (``relative_to="batch"``, open-r1) or, as in the paper
("k sampled responses for problem x"), the responses to the same prompt (``"prompt"``).
Correctness is judged as the ``correctness`` component does (shared per batch); a sample whose
gold answer is missing or unusable is not scored (``None``) where open-r1 counts it as correct,
and it still counts toward the set's shortest and longest lengths.
"""

from __future__ import annotations

from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.components.conciseness import completion_lengths
from rewards.components.correctness import default_verdicts
from rewards.params import ComponentInfo, ParamSpec, with_defaults
from rewards.verification.verify import MODES

PARAMS = (
    ParamSpec(
        "unit",
        "str",
        "characters",
        "how length is counted",
        choices=("characters", "tokens", "words"),
    ),
    ParamSpec(
        "relative_to",
        "str",
        "batch",
        "lengths compared across the batch (open-r1) or per prompt (Kimi 1.5)",
        choices=("batch", "prompt"),
    ),
    ParamSpec("correctness_mode", "str", "math", "how answers are compared", choices=MODES),
    ParamSpec(
        "gold_column", "str", "answer", "dataset column holding the gold answer", max_length=64
    ),
    ParamSpec("answer_tag", "str", "answer", "tag around the final answer", max_length=32),
)


def kimi_length_rewards(lengths: list[int], correct: list[bool]) -> list[float]:
    """Kimi 1.5's length reward over one set of responses (see the module docstring)."""
    shortest, longest = min(lengths), max(lengths)
    if shortest == longest:
        return [0.0] * len(lengths)
    out = []
    for n, ok in zip(lengths, correct, strict=True):
        lam = 0.5 - (n - shortest) / (longest - shortest)
        out.append(float(lam if ok else min(0.0, lam)))
    return out


class RelativeLength(RewardComponent):
    component = "relative_length"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.unit = p["unit"]
        self.relative_to = p["relative_to"]
        self.correctness_mode = p["correctness_mode"]
        self.gold_column = p["gold_column"]
        self.answer_tag = p["answer_tag"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        lengths = completion_lengths(texts, ctx, self.unit)
        if lengths is None:
            return [Judgement(None, "length in tokens needs completion_ids") for _ in texts]
        found = default_verdicts(
            texts, ctx, self.correctness_mode, self.gold_column, self.answer_tag
        )
        groups: dict[str, list[int]] = {}
        for i in range(len(texts)):
            key = str(ctx.prompts[i]) if self.relative_to == "prompt" and ctx.prompts else ""
            groups.setdefault(key, []).append(i)
        out: list[Judgement | None] = [None] * len(texts)
        for members in groups.values():
            group_lengths = [lengths[i] for i in members]
            rewards = kimi_length_rewards(group_lengths, [bool(found[i].correct) for i in members])
            lo, hi = min(group_lengths), max(group_lengths)
            for i, value in zip(members, rewards, strict=True):
                verdict = found[i]
                if verdict.correct is None:
                    out[i] = Judgement(None, verdict.explanation)
                    continue
                right = "right" if verdict.correct else "wrong"
                out[i] = Judgement(value, f"{lengths[i]} {self.unit} in [{lo}, {hi}], {right}")
        return out  # type: ignore[return-value]


INFO = ComponentInfo(
    name="relative_length",
    factory=RelativeLength,
    params=PARAMS,
    description=(
        "Kimi 1.5's length reward: 0.5 - (len - shortest)/(longest - shortest) within the batch "
        "(or per prompt); wrong answers only lose, never gain."
    ),
    source="Kimi k1.5 (arXiv 2501.12599) §2.3.3 length penalty; open-r1 len_reward",
)
