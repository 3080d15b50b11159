"""One set of generations the lab scores: what a Preview cached or a run stored."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewards.composer import ScoredSample, score
from rewards.lab.matrix import ScoreMatrix
from rewards.lab.probe_scores import ProbeScores, probe_scores
from rewards.spec import RewardSpec


@dataclass(frozen=True)
class Generations:
    """Completions with their prompts, gold answers and groups (aligned lists).

    ``completion_ids`` is ``None`` when the token ids are not known (a run's stored samples):
    components that count tokens then cannot score.
    """

    prompts: Sequence[Any]
    completions: Sequence[Any]
    groups: Sequence[Any]
    answers: Sequence[Any] | None = None
    completion_ids: Sequence[Sequence[int]] | None = None
    tokenize: Callable[[str], Sequence[int]] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        n = len(self.completions)
        for name in ("prompts", "groups", "answers", "completion_ids"):
            values = getattr(self, name)
            if values is not None and len(values) != n:
                raise ValueError(f"{name}: {len(values)} entries for {n} completions")

    def __len__(self) -> int:
        return len(self.completions)

    def score(self, spec: RewardSpec) -> list[ScoredSample]:
        """The composer's scores of these completions under ``spec``."""
        return score(
            spec,
            self.prompts,
            self.completions,
            answers=self.answers,
            completion_ids=self.completion_ids,
        )

    def matrix(self, spec: RewardSpec) -> ScoreMatrix:
        """Raw scores under ``spec`` as a matrix, with these groups."""
        return ScoreMatrix.from_scored(self.score(spec), self.groups)

    def probes(self, spec: RewardSpec) -> ProbeScores:
        """Every probe's edit of every completion, scored under ``spec``."""
        return probe_scores(
            spec,
            self.prompts,
            self.completions,
            self.answers,
            self.tokenize,
            self.completion_ids,
        )
