"""The Preview's reward lab as data (no Gradio here): A/B of specs and weight sweeps on the
session's cached generations (issue 23).

The cached completions are scored once per spec (the probes' edits too) and everything else is
a re-weighting (:mod:`rewards.lab`): the A/B table sorts and filters the comparison without
scoring again, and a sweep of 1,000 points takes a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rewards.completions.text import completion_text
from rewards.errors import RewardSpecError
from rewards.lab.batch import Generations
from rewards.lab.compare import compare
from rewards.lab.sweep import SweepAxis, sweep
from rewards.spec import PRESETS, RewardSpec
from ui.design.spec_io import parse_spec
from ui.preview.cache import PreviewCache
from ui.shared.lab_inputs import LabError
from ui.shared.messages import escape
from ui.shared.trace_view import fmt

#: The other specs the A/B panel holds (with the current one: four).
OTHER_SPECS = 3
NONE = "—"
COPY = "copy of the current spec"
#: What an A/B slot can start from: nothing, a copy of the current spec (to edit), a preset.
SOURCES = [NONE, COPY, *PRESETS]
SORTS = {
    "most disagreement first": "disagreement",
    "sample order": "sample",
    "largest total difference first": "diff",
}
AB_HEADERS = ["#", "group", "completion"]
#: Points along one axis in the Preview (a two-weight sweep: this squared at most).
MAX_UI_POINTS = {1: 1000, 2: 61}


def generations(
    cache: PreviewCache, tokenize: Callable[[str], Sequence[int]] | None
) -> Generations:
    """The cache as the lab reads it (``tokenize``: the preview model's, for the probes)."""
    return Generations(
        cache.prompts,
        cache.completions,
        cache.groups,
        cache.answers,
        cache.completion_ids,
        tokenize=tokenize,
    )


def other_spec(source: str, text: str, where: str) -> RewardSpec | None:
    """The spec of one A/B slot: its (edited) text; None for an empty slot."""
    if not (text or "").strip():
        if source in (NONE, "", None):
            return None
        raise LabError(f"{where}: the spec text is empty; pick a source or paste a spec")
    try:
        return parse_spec(text)
    except RewardSpecError as exc:
        raise LabError(f"{where}: {exc}") from None


def compare_cache(
    cache: PreviewCache,
    current: RewardSpec,
    others: Sequence[tuple[str, RewardSpec]],
    scale_rewards: str,
    tokenize: Callable[[str], Sequence[int]] | None = None,
) -> dict[str, Any]:
    """The current spec against ``others`` on the cache: :meth:`Comparison.to_dict`."""
    if cache.empty:
        raise LabError("Generate completions first: the lab compares specs on them")
    if not others:
        raise LabError("A/B: choose at least one other spec")
    labels = ["current"] + [label for label, _ in others]
    seen: dict[str, int] = {}
    unique = []
    for label in labels:  # two slots from the same preset stay apart
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    specs = list(zip(unique, [current, *(s for _, s in others)], strict=True))
    return compare(specs, generations(cache, tokenize), scale_rewards=scale_rewards).to_dict()


def ab_table(
    result: dict[str, Any], cache: PreviewCache, sort: str, only_flips: bool = False
) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows of the A/B table: per sample, each spec's total and advantage, the
    difference against the current spec and whether the advantage flips sign."""
    labels = [s["label"] for s in result["specs"]]
    others = labels[1:]
    headers = [*AB_HEADERS]
    headers += [f"total: {label}" for label in labels]
    headers += [f"advantage: {label}" for label in labels]
    headers += [f"Δ total: {label}" for label in others]
    headers += [f"flip: {label}" for label in others]
    rows = list(result["rows"])
    key = SORTS.get(sort, "disagreement")
    first = others[0] if others else None
    if key == "sample" or first is None:
        rows.sort(key=lambda r: r["sample"])
    elif key == "diff":
        rows.sort(key=lambda r: -abs(r[f"diff[{first}]"] or 0.0))
    else:
        rows.sort(key=lambda r: -max(r[f"disagreement[{o}]"] or 0.0 for o in others))
    if only_flips:
        rows = [r for r in rows if any(r[f"sign_flip[{o}]"] for o in others)]
    out = []
    for r in rows:
        i = r["sample"]
        row = [i, r["group"], _short(completion_text(cache.completions[i]))]
        row += [fmt(r[f"total[{label}]"]) for label in labels]
        row += [fmt(r[f"advantage[{label}]"]) for label in labels]
        row += [fmt(r[f"diff[{o}]"]) for o in others]
        row += ["flips" if r[f"sign_flip[{o}]"] else "" for o in others]
        out.append(row)
    return headers, out


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def ab_markdown(result: dict[str, Any]) -> str:
    """Per spec: mean total, zero-variance share, paying probes; per other spec: what changes."""
    lines = ["| spec | aggregation | mean total | zero-variance groups | probes it pays for |"]
    lines.append("|---|---|---|---|---|")
    for s in result["specs"]:
        paying = ", ".join(s["paying_probes"]) or "none"
        lines.append(
            f"| {s['label']} | {s['aggregation']} | {fmt(s['mean_total'])} | "
            f"{s['zero_std_fraction']:.0%} | {paying} |"
        )
    for v in result["versus"]:
        lines.append(
            f"\n**{v['label']}** against the current spec: **{len(v['sign_flips'])}** samples' "
            f"advantages change sign; the best sample changes in **{v['best_changes']}** of "
            f"{v['groups']} groups; mean rank correlation within groups "
            f"{fmt(v['mean_spearman'])}; largest |Δ total| {fmt(v['max_abs_diff'])}."
        )
    return "\n".join(lines)


def verdict_markdown(result: dict[str, Any]) -> str:
    """The verdict of each other spec against the current one (:mod:`rewards.lab.verdict`),
    one line each."""
    return "\n".join(f"- {escape(line)}" for line in result["verdicts"])


def sweep_cache(
    cache: PreviewCache,
    spec: RewardSpec,
    axes: Sequence[tuple[str, float, float, int]],
    scale_rewards: str = "group",
    tokenize: Callable[[str], Sequence[int]] | None = None,
) -> dict[str, Any]:
    """``spec`` swept over ``axes`` (``(component, from, to, points)``) on the cache:
    :meth:`Sweep.to_dict`."""
    if cache.empty:
        raise LabError("Generate completions first: the sweep re-weights their scores")
    names = spec.metric_names()
    built = []
    for i, (name, start, stop, num) in enumerate(axes):
        where = f"weight {i + 1}"
        if name not in names:
            raise LabError(f"{where}: choose one of the spec's components ({', '.join(names)})")
        cap = MAX_UI_POINTS[len(axes)]
        if not isinstance(num, int | float) or not 2 <= int(num) <= cap:
            raise LabError(f"{where}: 2 to {cap} points here, got {num}")
        try:
            built.append(SweepAxis.linspace(name, start, stop, int(num)))
        except ValueError as exc:
            raise LabError(f"{where}: {exc}") from None
    if len({a.name for a in built}) < len(built):
        raise LabError("weight 2: choose a different component than weight 1")
    batch = generations(cache, tokenize)
    result = sweep(
        batch.matrix(spec),
        built,
        probes=batch.probes(spec),
        scale_rewards=scale_rewards,
        aggregation=spec.aggregation,
    )
    return result.to_dict()


def onsets_markdown(result: dict[str, Any]) -> str:
    """Where each probe starts paying, in words."""
    names = [a["name"] for a in result["axes"]]
    lines = []
    for probe, points in result["onsets"].items():
        if not points:
            continue
        where = "; ".join(
            ", ".join(f"{n} = {v:.3g}" for n, v in zip(names, p, strict=True)) for p in points[:6]
        )
        more = f" (and {len(points) - 6} more points)" if len(points) > 6 else ""
        lines.append(f"- **{probe}** starts paying at {where}{more}")
    if not lines:
        return "No probe pays anywhere on this grid."
    return (
        "Where a hacking probe starts paying (the reward rises for that cheap edit):\n"
        + "\n".join(lines)
    )
