"""``/score_preview``: completions (texts, or tool rollouts as lists of turns) scored with a
reward spec, each text capped."""

from __future__ import annotations

from typing import Any

from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.params import describe_value, text_problem
from rewards.spec import RewardSpec
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from ui.api.conversations import CompletionError, completions_chars
from ui.api.errors import ApiError
from ui.design.spec_io import parse_spec
from ui.shared.context import AppContext

MAX_API_COMPLETIONS = 1000


#: Longest completion (and prompt, and answer) one scoring call accepts, in characters.
MAX_API_TEXT_CHARS = 20_000


#: Most characters of completions, prompts and answers together in one scoring call: about 1 s
#: of language identification and 50 MB of traces on the reference machine.
MAX_API_TOTAL_CHARS = 1_000_000


def reward_spec(spec: dict | str) -> RewardSpec:
    try:
        return parse_spec(spec) if isinstance(spec, str) else RewardSpec.from_dict(spec)
    except RewardSpecError as exc:
        raise ApiError(f"spec.{exc}" if exc.field else f"spec: {exc}") from None


def score_preview(
    ctx: AppContext,
    spec: dict | str,
    completions: list[str | list[dict[str, Any]]],
    prompts: list[str] | None = None,
    answers: list[str | None] | None = None,
) -> dict[str, Any]:
    """Totals and traces of ``completions`` (texts, or tool rollouts as lists of turns:
    :mod:`ui.api.conversations`) under ``spec``."""
    reward = reward_spec(spec)
    try:  # texts, or tool rollouts as lists of turns, each part bounded
        total = completions_chars(completions, MAX_API_TEXT_CHARS, MAX_API_COMPLETIONS)
    except CompletionError as exc:
        raise ApiError(str(exc)) from None
    for name, values in (("prompts", prompts), ("answers", answers)):
        if values is not None:
            check_texts(name, values, len(completions), allow_none=name == "answers")
            total += sum(len(v) for v in values if v is not None)
    if total > MAX_API_TOTAL_CHARS:
        raise ApiError(
            f"completions: {total:,} characters of completions, prompts and answers in one "
            f"call; at most {MAX_API_TOTAL_CHARS:,} (send fewer or shorter completions)"
        )
    with call_deadline(INTERACTIVE_DEADLINE_S):  # answers math-verify cannot settle in time
        scored = score(reward, prompts or [""] * len(completions), completions, answers=answers)
    return {
        "components": reward.metric_names(),
        "totals": [s.total for s in scored],
        "samples": [s.to_dict() for s in scored],
    }


def check_texts(name: str, values: Any, count: int, allow_none: bool = False) -> None:
    """``values`` is a list of ``count`` strings (or None, where allowed), each within the
    per-text cap and storable as text."""
    kind = "strings or nulls" if allow_none else "strings"
    if not isinstance(values, list):
        raise ApiError(f"{name}: must be a list of {kind}")
    if len(values) != count:
        raise ApiError(f"{name}: {len(values)} values for {count} completions")
    for i, value in enumerate(values):
        if value is None and allow_none:
            continue
        if not isinstance(value, str):
            raise ApiError(f"{name}[{i}]: must be a string, got {describe_value(value)}")
        if len(value) > MAX_API_TEXT_CHARS:
            raise ApiError(
                f"{name}[{i}]: {len(value):,} characters; at most {MAX_API_TEXT_CHARS:,} each"
            )
        problem = text_problem(value)  # RE2 and SQLite take UTF-8 only
        if problem:
            raise ApiError(f"{name}[{i}]: {problem}")
