"""What every reward component shares: the TRL calling convention and per-sample judgements.

A component is a callable object (not a closure, so it pickles: TRL's async rollout worker sends
reward functions to a child process) whose ``__name__`` is its metric name. Calling it follows
TRL's convention, ``fn(completions, **kwargs) -> list[float | None]``; :meth:`judge` returns the
same numbers with a one-line explanation each, which the composer puts into traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewards.completions.text import completion_texts


@dataclass(frozen=True)
class Judgement:
    """One component's score for one completion, and why (``value`` ``None``: not scored)."""

    value: float | None
    explanation: str


class BatchContext:
    """Everything a component may read about a batch besides the completion texts.

    ``columns`` holds the dataset columns TRL forwards (``answer``, ...), each a list aligned
    with the completions; ``memo`` is shared by the components of one composer call, so a
    correctness verdict is computed once even when two components need it. ``completions`` are
    the completions as the trainer gave them (a tool rollout's messages, with its tool calls and
    results), for the components that read more than the text; ``None`` when only text exists.
    """

    def __init__(
        self,
        size: int,
        prompts: Sequence[Any] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        columns: dict[str, Any] | None = None,
        memo: dict[Any, Any] | None = None,
        completions: Sequence[Any] | None = None,
    ) -> None:
        self.size = size
        self.prompts = prompts
        self.completion_ids = _aligned("completion_ids", completion_ids, size)
        self.columns = columns or {}
        self.memo = {} if memo is None else memo
        self.completions = None if completions is None else list(completions)
        if self.completions is not None and len(self.completions) != size:
            raise ValueError(f"completions: {len(self.completions)} for {size} texts")

    def column(self, name: str) -> list[Any] | None:
        """Column ``name`` aligned with the completions, or ``None`` when absent."""
        return _aligned(name, self.columns.get(name), self.size)


def _aligned(name: str, values: Any, size: int) -> list[Any] | None:
    if values is None:
        return None
    if isinstance(values, str) or not isinstance(values, Sequence):
        values = [values] * size  # one value for the whole batch
    values = list(values)
    if len(values) != size:
        raise ValueError(f"{name}: {len(values)} values for {size} completions")
    return values


# Arguments TRL passes that are not dataset columns.
_NOT_COLUMNS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})


class RewardComponent:
    """Base class: subclasses set ``component`` and implement :meth:`judge`.

    A subclass's constructor takes ``(name=None, **params)`` and reads its settings from
    ``rewards.params.with_defaults(PARAMS, params)``: defaults live in its ``ParamSpec``s only.
    """

    component: str = ""

    def __init__(self, name: str | None = None) -> None:
        self.__name__ = name or self.component

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        """Score each completion text, with an explanation."""
        raise NotImplementedError

    def __call__(
        self,
        completions: Sequence[Any],
        prompts: Sequence[Any] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """TRL's reward-function call: unknown keyword arguments are ignored."""
        texts = completion_texts(completions)
        columns = {k: v for k, v in kwargs.items() if k not in _NOT_COLUMNS}
        ctx = BatchContext(len(texts), prompts, completion_ids, columns, completions=completions)
        return [j.value for j in self.judge(texts, ctx)]

    def __repr__(self) -> str:
        return f"<reward {self.__name__} ({self.component})>"
