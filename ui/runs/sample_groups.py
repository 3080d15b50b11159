"""The spread of each group of a step's samples, and which samples the table shows (no Gradio).

GRPO and RLOO learn from the differences within a group: a group whose completions all got the
same reward has advantages of 0 and teaches nothing (DAPO, Yu et al. 2025 §3.2, filters such
groups out for that reason; TRL logs their share as ``frac_reward_zero_std``). The spread here is
TRL's: the sample standard deviation of the group's scored totals (``nanstd``, with Bessel's
correction), zero when ``torch.isclose(std, 0)`` would say so (``GRPOTrainer``'s
``is_std_zero``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.tracking.distributions import CORRECTNESS_COMPONENTS
from storage.sqlite.schema import Sample

SHOW_ALL = "all"
SHOW_ZERO_VARIANCE = "zero-variance groups"
SHOW_WRONG = "wrong answers"
SHOW_TRUNCATED = "truncated"
SAMPLE_FILTERS = (SHOW_ALL, SHOW_ZERO_VARIANCE, SHOW_WRONG, SHOW_TRUNCATED)
ZERO_STD = 1e-8  # torch.isclose(std, 0)'s default atol
GROUP_HEADERS = ["group", "completions", "mean", "std", "min", "max", "spread"]


@dataclass(frozen=True)
class GroupSpread:
    """The scored totals of one group: ``n`` of its ``size`` completions could be scored."""

    group: int | None
    size: int
    totals: tuple[float, ...]

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.totals) if len(self.totals) > 1 else None

    @property
    def zero_variance(self) -> bool:
        std = self.std
        return std is not None and std <= ZERO_STD

    def row(self) -> list[Any]:
        """The group's line in the groups table."""
        t = self.totals
        cells = [statistics.fmean(t), self.std, min(t), max(t)] if t else [None] * 4
        flag = "zero variance: teaches nothing" if self.zero_variance else ""
        if not t:
            flag = "no completion scored"
        return [self.group, self.size, *(_cell(c) for c in cells), flag]


def _cell(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value + 0.0:.3g}"


def group_spreads(samples: Sequence[Sample]) -> list[GroupSpread]:
    """One spread per group, in the order the groups first appear."""
    groups: dict[int | None, list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.group, []).append(s)
    return [
        GroupSpread(g, len(rows), tuple(s.total for s in rows if s.total is not None))
        for g, rows in groups.items()
    ]


def is_wrong(sample: Sample) -> bool:
    """Whether the sample's correctness component scored it at or below 0 (a wrong answer)."""
    for t in sample.trace:
        if isinstance(t, dict) and t.get("component") in CORRECTNESS_COMPONENTS:
            raw = t.get("raw")
            return isinstance(raw, (int, float)) and raw <= 0
    return False


def is_truncated(sample: Sample, max_tokens: int | None) -> bool:
    """Whether the completion used every token the run allowed (cut before it could end).

    A completion that ended exactly at the limit counts too: the row keeps the length, not
    whether the last token was the end of sequence that TRL's ``is_truncated`` looks for."""
    return sample.tokens is not None and max_tokens is not None and sample.tokens >= max_tokens


def shown_samples(
    samples: Sequence[Sample], show: str, max_tokens: int | None = None
) -> list[Sample]:
    """The samples ``show`` (one of :data:`SAMPLE_FILTERS`) keeps, in their order."""
    if show == SHOW_ZERO_VARIANCE:
        flat = {g.group for g in group_spreads(samples) if g.zero_variance}
        return [s for s in samples if s.group in flat]
    if show == SHOW_WRONG:
        return [s for s in samples if is_wrong(s)]
    if show == SHOW_TRUNCATED:
        return [s for s in samples if is_truncated(s, max_tokens)]
    return list(samples)


def groups_note(
    samples: Sequence[Sample], shown: int, show: str, max_tokens: int | None = None
) -> str:
    """One line over the tables: the groups with zero variance, and what the filter kept."""
    if not samples:
        return ""
    spreads = group_spreads(samples)
    flat = sum(g.zero_variance for g in spreads)
    line = f"{len(spreads)} group{'s' * (len(spreads) != 1)} stored at this step"
    if flat:
        line += (
            f", **{flat} with zero variance**: every completion got the same reward, so their "
            "advantages are 0 and they teach GRPO and RLOO nothing"
        )
    line += "."
    if show != SHOW_ALL:
        line += f" Showing {shown} of {len(samples)} samples ({show})."
        if not shown:
            line += " " + _why_none(samples, show, max_tokens)
    return line


def _why_none(samples: Sequence[Sample], show: str, max_tokens: int | None) -> str:
    if show == SHOW_WRONG and not any(_has_correctness(s) for s in samples):
        return "This reward has no correctness component to call an answer wrong."
    if show == SHOW_TRUNCATED and all(s.tokens is None for s in samples):
        return "These samples were stored before their lengths were recorded."
    if show == SHOW_TRUNCATED:
        return f"None used all {max_tokens} tokens." if max_tokens else ""
    return ""


def _has_correctness(sample: Sample) -> bool:
    return any(
        isinstance(t, dict) and t.get("component") in CORRECTNESS_COMPONENTS for t in sample.trace
    )
