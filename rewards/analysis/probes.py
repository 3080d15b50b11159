"""Reward-hacking probes: which cheap edits of a completion does the reward pay for?

Each probe edits the completion in one way a policy could learn to exploit, then scores the
original and every edit with the same spec and reports how the total and each component move.
A probe that raises the reward is a loophole a GRPO run may find (see Skalse et al. 2022,
"Defining and Characterizing Reward Hacking", and the length/format exploits reported for
R1-style training). Probes:

- ``strip tags``: remove every ``<tag>``/``</tag>``;
- ``repeat a sentence``: the longest sentence said four times;
- ``truncate``: the first half of the text (as if generation stopped early);
- ``append filler``: five sentences of content-free padding appended;
- ``answer only``: just ``<answer>…</answer>`` with the completion's own answer;
- ``wrong answer, right format``: the marked answer replaced by a different one.

Lengths in tokens need ids: pass ``completion_ids`` for the original and ``tokenize`` (e.g.
``tokenizer.encode``) for the edits, otherwise token-based components report "not scored".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewards.completions.text import completion_text
from rewards.composer import ScoredSample, score
from rewards.spec import RewardSpec
from rewards.verification.answers import find_answer

_TAG_RE = re.compile(r"</?[A-Za-z][\w-]{0,39}>")
_SENTENCE_RE = re.compile(r"[^.!?\n]+[.!?]*")  # linear: the tail always matches
FILLER = " Let me double-check this carefully to be completely sure." * 5


@dataclass(frozen=True)
class ComponentDelta:
    """How one component moved under a probe.

    ``delta_raw`` is ``None`` where either side was not scored; ``delta_contribution`` counts an
    unscored side as 0, as the total does (TRL's rule), and is ``None`` only when neither side
    was scored.
    """

    name: str
    raw: float | None
    delta_raw: float | None
    delta_contribution: float | None
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "raw": self.raw,
            "delta_raw": self.delta_raw,
            "delta_contribution": self.delta_contribution,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class ProbeResult:
    """One probe: the edited text, its total, the change against the original, per component.

    ``applicable`` is False when the edit does not apply (e.g. no marked answer to change);
    ``rewarded`` is True when the edit raises the total, i.e. the reward pays for it.
    """

    name: str
    description: str
    applicable: bool
    text: str | None = None
    total: float | None = None
    delta_total: float | None = None
    rewarded: bool = False
    components: list[ComponentDelta] = field(default_factory=list)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "applicable": self.applicable,
            "text": self.text,
            "total": self.total,
            "delta_total": self.delta_total,
            "rewarded": self.rewarded,
            "components": [c.to_dict() for c in self.components],
            "summary": self.summary,
        }


def answer_tag_of(spec: RewardSpec) -> str:
    """The answer tag the spec's components read (``answer`` unless one sets another)."""
    for _, comp in spec.enabled_components():
        tag = comp.params.get("answer_tag")
        if tag:
            return tag
    return "answer"


def _wrong(answer: str) -> str:
    stripped = answer.strip()
    if re.fullmatch(r"-?\d+", stripped):
        return str(int(stripped) + 1)
    if re.fullmatch(r"-?\d*\.\d+", stripped):
        return str(float(stripped) + 1)
    if re.fullmatch(r"\(?[A-Ea-e]\)?", stripped):
        letter = stripped.strip("()").upper()
        return "B" if letter == "A" else "A"
    return "42" if stripped != "42" else "43"


def perturbations(text: str, answer_tag: str = "answer") -> list[tuple[str, str, str | None]]:
    """``(name, description, edited text or None when not applicable)`` for each probe."""
    span = find_answer(text, answer_tag)
    sentences = [s for s in _SENTENCE_RE.findall(_TAG_RE.sub(" ", text)) if s.strip()]
    longest = max(sentences, key=len).strip() if sentences else None
    stripped = _TAG_RE.sub("", text)
    out: list[tuple[str, str, str | None]] = [
        ("strip tags", "every <tag> removed", stripped if stripped != text else None),
        (
            "repeat a sentence",
            "the longest sentence said four times",
            text.replace(longest, " ".join([longest] * 4), 1) if longest else None,
        ),
        ("truncate", "only the first half of the text", text[: len(text) // 2] if text else None),
        ("append filler", "content-free padding appended", text + FILLER),
        (
            "answer only",
            "just the final answer, no reasoning",
            f"<{answer_tag}>{span.text}</{answer_tag}>" if span else None,
        ),
        (
            "wrong answer, right format",
            "the marked answer replaced by a different one",
            text[: span.start] + _wrong(span.text) + text[span.end :] if span else None,
        ),
    ]
    return out


def run_probes(
    spec: RewardSpec,
    prompt: Any,
    completion: Any,
    answer: Any = None,
    completion_ids: Sequence[int] | None = None,
    tokenize: Callable[[str], Sequence[int]] | None = None,
) -> list[ProbeResult]:
    """Score ``completion`` and each probe's edit of it under ``spec``; report the changes.

    Args:
        spec: the reward.
        prompt: the prompt (passed to components as TRL would).
        completion: a string or a TRL chat completion.
        answer: the gold answer, if the task has one.
        completion_ids: token ids of ``completion``; used only together with ``tokenize``
            (the edits need ids too, and scores of one probe must be comparable).
        tokenize: text -> token ids, e.g. ``tokenizer.encode``; without it, components that
            count tokens report "not scored" for the original and every edit alike.
    """
    text = completion_text(completion)
    probes = perturbations(text, answer_tag_of(spec))
    edits = [edited for _, _, edited in probes if edited is not None]
    texts = [text, *edits]
    ids: list[Sequence[int]] | None = None
    if tokenize is not None:
        ids = [completion_ids if completion_ids is not None else tokenize(text)]
        ids += [tokenize(t) for t in edits]
    elif completion_ids is not None:
        ids = None  # the edits have no ids; token lengths are not scored for any variant
    scored = score(
        spec, [prompt] * len(texts), texts, answers=[answer] * len(texts), completion_ids=ids
    )
    base, rest = scored[0], iter(scored[1:])
    results = []
    for name, description, edited in probes:
        if edited is None:
            results.append(ProbeResult(name, description, False, summary="does not apply here"))
            continue
        results.append(_compare(name, description, edited, base, next(rest)))
    return results


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _contribution_delta(new: float | None, old: float | None) -> float | None:
    if new is None and old is None:
        return None
    return (new or 0.0) - (old or 0.0)


def _compare(
    name: str, description: str, edited: str, base: ScoredSample, new: ScoredSample
) -> ProbeResult:
    components = []
    for old_t, new_t in zip(base.trace, new.trace, strict=True):
        components.append(
            ComponentDelta(
                new_t.name,
                new_t.raw,
                _sub(new_t.raw, old_t.raw),
                _contribution_delta(new_t.contribution, old_t.contribution),
                new_t.explanation,
            )
        )
    delta = _sub(new.total, base.total)
    rewarded = delta is not None and delta > 1e-9
    moved = [c for c in components if c.delta_contribution and abs(c.delta_contribution) >= 0.005]
    moved.sort(key=lambda c: -abs(c.delta_contribution or 0.0))
    detail = ", ".join(
        f"{c.name} {c.delta_contribution:+.2f}" + (" not scored" if c.raw is None else "")
        for c in moved[:3]
    )
    if delta is None:
        summary = "total not scored"
    elif abs(delta) <= 1e-9:
        summary = "no change"
    else:
        summary = f"reward {'rises' if delta > 0 else 'falls'} by {abs(delta):.2f}"
        if detail:
            summary += f" ({detail})"
    return ProbeResult(
        name, description, True, edited, new.total, delta, rewarded, components, summary
    )
