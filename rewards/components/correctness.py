"""Correctness: is the completion's final answer equal to the gold answer?

Reference: open-r1 ``accuracy_reward`` and TRL ``trl.rewards.accuracy_reward`` — parse the gold
with math-verify, ``None`` when it does not parse, else ``float(verify(gold, parse(completion)))``.
Departures (see :mod:`rewards.verification.verify`): the answer is extracted first (``<answer>``
tag, ``\\boxed{}``, GSM8K ``####``), integers are compared exactly without math-verify, math-verify
runs in supervised workers with a deadline; a wrong answer scores ``wrong_value`` (0 by default;
-0.5 in hand-tuned GRPO scripts). Extra modes for non-math tasks: numeric with tolerance,
normalised exact string, multiple-choice letter.

``answer_source`` decides what an answer must look like to be paid. ``any`` (the default, as
before) takes the answer tag, then ``\\boxed{}``, then GSM8K's ``####``, and else judges the
whole text, so an untagged "The answer is 6" can score 1. ``tag_or_boxed`` pays only an answer
inside the answer tag or ``\\boxed{}``, as open-r1's ``accuracy_reward`` and TRL's
``accuracy_reward`` do (their math-verify extraction reads LaTeX/boxed answers only); anything
else scores ``wrong_value``. The default stays ``any`` so existing specs keep their numbers and
the format component, not correctness, is what pays the tags; choose ``tag_or_boxed`` to make
correctness alone insist on a marked answer.
"""

from __future__ import annotations

from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.params import ComponentInfo, ParamSpec, with_defaults
from rewards.verification.verify import ANSWER_SOURCES, MODES, Verdict, judge_batch

PARAMS = (
    ParamSpec("mode", "str", "math", "how answers are compared", choices=MODES),
    ParamSpec(
        "gold_column", "str", "answer", "dataset column holding the gold answer", max_length=64
    ),
    ParamSpec(
        "answer_tag", "str", "answer", "tag around the final answer ('' to skip)", max_length=32
    ),
    ParamSpec(
        "answer_source",
        "str",
        "any",
        "which answers are paid: any (tag, \\boxed{}, ####, else the whole text) or only "
        "tag_or_boxed",
        choices=tuple(ANSWER_SOURCES),
    ),
    ParamSpec("wrong_value", "float", 0.0, "score of a wrong answer", min=-1.0, max=0.0),
    ParamSpec("abs_tol", "float", 1e-6, "numeric mode: absolute tolerance", min=0.0, max=1e6),
    ParamSpec("rel_tol", "float", 0.0, "numeric mode: relative tolerance", min=0.0, max=1.0),
    ParamSpec("letters", "str", "ABCD", "choice mode: the option letters, in order", max_length=26),
)


def verdicts(
    texts: list[str], ctx: BatchContext, *, mode: str, gold_column: str, **options: Any
) -> list[Verdict]:
    """Correctness verdicts for a batch, memoised in ``ctx`` (shared with ``conciseness``)."""
    golds = ctx.column(gold_column) or [None] * len(texts)
    key = ("verdicts", mode, gold_column, tuple(sorted(options.items())))
    if key not in ctx.memo:
        ctx.memo[key] = judge_batch(texts, golds, mode, **options)  # type: ignore[arg-type]
    return ctx.memo[key]


def default_verdicts(
    texts: list[str], ctx: BatchContext, mode: str, gold_column: str, answer_tag: str
) -> list[Verdict]:
    """Correctness verdicts for the length rewards (``conciseness``, ``relative_length``): the
    ``correctness`` component's default tolerances and option letters."""
    return verdicts(
        texts,
        ctx,
        mode=mode,
        gold_column=gold_column,
        answer_source="any",
        answer_tag=answer_tag,
        abs_tol=1e-6,
        rel_tol=0.0,
        letters="ABCD",
    )


class Correctness(RewardComponent):
    component = "correctness"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.mode = p["mode"]
        self.gold_column = p["gold_column"]
        self.wrong_value = p["wrong_value"]
        self.answer_tag = p["answer_tag"]
        self.options = {
            "answer_source": p["answer_source"],  # an unpaid answer is never verified
            "answer_tag": p["answer_tag"],
            "abs_tol": p["abs_tol"],
            "rel_tol": p["rel_tol"],
            "letters": p["letters"],
        }

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        out = []
        found = verdicts(texts, ctx, mode=self.mode, gold_column=self.gold_column, **self.options)
        for v in found:
            if v.correct is None:
                out.append(Judgement(None, v.explanation))
            elif not v.paid:
                where = f"<{self.answer_tag}>" if self.answer_tag else "an answer tag"
                out.append(
                    Judgement(
                        self.wrong_value, f"no answer inside {where} or \\boxed{{}}: not paid"
                    )
                )
            else:
                out.append(Judgement(1.0 if v.correct else self.wrong_value, v.explanation))
        return out


def _check(params: dict[str, Any]) -> None:
    from rewards.errors import RewardSpecError

    letters = params["letters"]
    if not (
        letters.isascii() and letters.isupper() and letters.isalpha() and len(set(letters)) > 1
    ) or len(set(letters)) != len(letters):
        raise RewardSpecError(
            "letters", f"must be 2 to 26 distinct capital letters A-Z, got {letters!r}"
        )


INFO = ComponentInfo(
    name="correctness",
    factory=Correctness,
    params=PARAMS,
    description=(
        "1 when the final answer equals the gold answer, else wrong_value; not scored when the "
        "gold is missing or unusable."
    ),
    source=(
        "open-r1 accuracy_reward / TRL trl.rewards.accuracy_reward (math-verify); answer "
        "extracted from <answer> or \\boxed{} first"
    ),
    check=_check,
)
