"""The Preview's cache of generations, re-scored on every reward change (no Gradio here).

Generating completions takes seconds to minutes; scoring them takes milliseconds. So the
Preview keeps what the model wrote in a :class:`PreviewCache` and :meth:`PreviewCache.rescore`
turns it into the table, the contribution chart data and the group diagnostics for whatever spec
the Design tab holds now, without generating again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewards.analysis.diagnostics import group_diagnostics
from rewards.completions.tool_calls import final_text
from rewards.composer import score
from rewards.lab.advantages import grpo_advantages
from rewards.lab.matrix import ScoreMatrix
from rewards.spec import RewardSpec
from ui.shared.conversation_view import completion_view
from ui.shared.trace_view import cut_note, extracted_text

FIXED_COLUMNS = ["#", "group", "prompt", "completion", "gold", "extracted"]


@dataclass
class PreviewCache:
    """Completions generated for a preview, in prompt-major order.

    Attributes:
        prompts: prompt text per completion (as shown; the chat messages rendered).
        completions: completion text, or a tool rollout's messages (TRL's conversation).
        answers: gold answer per completion (``None``: no gold).
        completion_ids: generated token ids per completion (for token-level components).
        truncated: whether each completion hit the token limit.
        groups: index of the prompt each completion answers (its GRPO group).
        source: a line describing model and data, for the page.
        model: key of the model that wrote them (``repr`` of its ``ModelSpec``).
    """

    prompts: list[str] = field(default_factory=list)
    completions: list[Any] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)
    completion_ids: list[list[int]] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    source: str = ""
    model: str = ""

    def __post_init__(self) -> None:
        n = len(self.completions)
        for name in ("prompts", "answers", "completion_ids", "truncated", "groups"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name}: {len(getattr(self, name))} entries for {n} completions")

    def __len__(self) -> int:
        return len(self.completions)

    @property
    def empty(self) -> bool:
        return not self.completions

    def rescore(self, spec: RewardSpec) -> PreviewScores:
        """Score every cached completion with ``spec``."""
        if self.empty:
            return PreviewScores([], [], [])
        scored = score(
            spec,
            self.prompts,
            self.completions,
            answers=self.answers,
            completion_ids=self.completion_ids,
        )
        return PreviewScores(scored, self.groups, spec.metric_names(), self, spec.aggregation, spec)

    @classmethod
    def from_samples(
        cls,
        prompts: Sequence[str],
        answers: Sequence[str | None],
        samples: Sequence[Any],
        source: str = "",
        model: str = "",
    ) -> PreviewCache:
        """From ``engine.generation.sampling.GeneratedSample`` objects (``prompt_index``, ``text``,
        ``token_ids``, ``truncated``) or ``engine.tools.rollout.ToolRollout`` ones (whose
        completion is the ``conversation``, its tokens ``completion_ids``), one prompt and
        answer per prompt index."""
        return cls(
            prompts=[prompts[s.prompt_index] for s in samples],
            completions=[s.conversation if hasattr(s, "conversation") else s.text for s in samples],
            answers=[answers[s.prompt_index] for s in samples],
            completion_ids=[
                list(s.completion_ids if hasattr(s, "completion_ids") else s.token_ids)
                for s in samples
            ],
            truncated=[bool(s.truncated) for s in samples],
            groups=[s.prompt_index for s in samples],
            source=source,
            model=model,
        )


@dataclass
class PreviewScores:
    """The cache scored with one spec: what the Preview tab shows."""

    scored: list[Any]
    groups: list[int]
    components: list[str]
    cache: PreviewCache | None = None
    aggregation: str = "sum_then_normalize"
    spec: RewardSpec | None = None  # the reward that scored them

    @property
    def totals(self) -> list[float | None]:
        return [s.total for s in self.scored]

    def headers(self) -> list[str]:
        return [*FIXED_COLUMNS, *self.components, "total"]

    def rows(self) -> list[list[Any]]:
        """One row per completion: prompt, highlighted completion, gold, extracted answer, each
        component's raw score (``None``: could not score), total."""
        cache = self.cache
        if cache is None:
            return []
        out = []
        for i, s in enumerate(self.scored):
            raw = {t.name: t.raw for t in s.trace}
            completion = completion_view(cache.completions[i])  # its tool calls as turns
            if cache.truncated[i]:
                completion += ' <span style="color:#b45309">[cut at max tokens]</span>'
            text = cache.completions[i]  # a tool rollout's turns are each cut when drawn
            note = cut_note(text) if isinstance(text, str) else ""
            if note:
                completion += f' <span style="color:#b45309">[{note}]</span>'
            out.append(
                [
                    i,
                    cache.groups[i],
                    cache.prompts[i],
                    completion,
                    cache.answers[i] or "",
                    extracted_text(final_text(cache.completions[i])),  # after any calls
                    *[raw.get(c) for c in self.components],
                    s.total,
                ]
            )
        return out

    def contributions(self) -> dict[str, list[float | None]]:
        """Weighted contribution of each component per completion."""
        out: dict[str, list[float | None]] = {c: [] for c in self.components}
        for s in self.scored:
            by_name = {t.name: t.contribution for t in s.trace}
            for c in self.components:
                out[c].append(by_name.get(c))
        return out

    def mean_total(self) -> float | None:
        values = [t for t in self.totals if t is not None]
        return sum(values) / len(values) if values else None

    def advantage_line(self) -> str:
        """GRPO's advantages of these scores under the spec's aggregation (TRL's formulas,
        ``scale_rewards="group"``), in one Markdown line."""
        if not self.scored:
            return ""
        matrix = ScoreMatrix.from_scored(self.scored, self.groups)
        adv = grpo_advantages(
            matrix.raw, matrix.weights, matrix.groups, aggregation=self.aggregation
        )
        top = float(abs(adv.advantages).max())
        return (
            f"- GRPO advantages ({self.aggregation.replace('_', ' ')}): largest |A| {top:.2f}, "
            f"groups with no signal {float(adv.zero_std_fraction[0]):.0%}"
        )

    def diagnostics(self) -> Any:
        """The reward library's group diagnostics of these scores."""
        return group_diagnostics(self.scored, self.groups, self.spec)
