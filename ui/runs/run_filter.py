"""Finding runs in a long list: search, filter by status, sort (no Gradio here).

The search matches every word typed (case-insensitively) against a run's id, name, algorithm,
tags and note, so "grpo baseline" finds the GRPO runs tagged baseline. The filter narrows the
runs table only; the run picker keeps every run, so the open run never disappears from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage.runs import RunInfo
from storage.sqlite.schema import RunLabel, RunStatus

ANY_STATUS = "any status"
STATUS_CHOICES = [ANY_STATUS, *(s.value for s in RunStatus)]
MAX_QUERY_CHARS = 200

# Sort name -> (key of a run, descending); ties keep the store's order (newest first).
SORTS: dict[str, tuple[Callable[[RunInfo], Any], bool]] = {
    "newest first": (lambda r: r.created_at, True),
    "oldest first": (lambda r: r.created_at, False),
    "name": (lambda r: r.name.casefold(), False),
    "status": (lambda r: r.status.value, False),
    "most steps": (lambda r: r.last_step, True),
}
DEFAULT_SORT = "newest first"


@dataclass(frozen=True)
class RunFilter:
    """What the runs table shows: runs matching ``query`` with ``status``, in ``sort`` order."""

    query: str = ""
    status: str = ANY_STATUS
    sort: str = DEFAULT_SORT

    @classmethod
    def from_inputs(cls, query: Any, status: Any, sort: Any) -> RunFilter:
        """From the page's controls; anything unexpected falls back to the default (a stale or
        forged value filters nothing away rather than failing the tick)."""
        text = query[:MAX_QUERY_CHARS] if isinstance(query, str) else ""
        return cls(
            query=" ".join(text.casefold().split()),
            status=status if status in STATUS_CHOICES else ANY_STATUS,
            sort=sort if sort in SORTS else DEFAULT_SORT,
        )

    @property
    def active(self) -> bool:
        return bool(self.query) or self.status != ANY_STATUS

    def apply(self, runs: Sequence[RunInfo], labels: Mapping[str, RunLabel]) -> list[RunInfo]:
        """The runs that match, sorted."""
        words = self.query.casefold().split()
        kept = [
            r
            for r in runs
            if (self.status == ANY_STATUS or r.status.value == self.status)
            and all(w in _haystack(r, labels.get(r.id)) for w in words)
        ]
        key, descending = SORTS[self.sort]
        return sorted(kept, key=key, reverse=descending)


def _haystack(run: RunInfo, label: RunLabel | None) -> str:
    parts = [run.id, run.name, run.algorithm]
    if label is not None:
        parts += [*label.tags, label.note]
    return "\n".join(parts).casefold()
