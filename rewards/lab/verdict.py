"""One verdict per pair of specs: which teaches correct answers harder, which pays for the
hacking probes, and how often the best sample of a group changes.

A sample is *correct* when a ``correctness`` component of any spec in the comparison scores it
1 (its definition: 1 when the final answer equals the gold one). A spec's *correct margin* is
the mean GRPO advantage of the correct samples minus that of the wrong ones, over the groups
that hold both: how much harder the update pushes a right answer up than a wrong one (the
advantage, not the total, is what the policy gradient multiplies; Shao et al. 2024, DeepSeekMath,
eq. 3). Margins of two specs compare directly when both are scaled by the group's std
(``scale_rewards: group``, TRL's default); otherwise they are in each spec's reward units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rewards.lab.compare import Comparison, SpecRun, Versus

#: Margins closer than this read as a tie.
MARGIN_TIE = 0.05


def correct_mask(runs: list[SpecRun]) -> np.ndarray | None:
    """Per sample 1.0 (correct), 0.0 (wrong) or NaN (not scored), from the first spec with a
    ``correctness`` component; ``None`` when no spec has one."""
    for run in runs:
        if "correctness" in run.matrix.components:
            raw = run.matrix.raw[:, run.matrix.components.index("correctness")]
            return np.where(np.isnan(raw), np.nan, np.isclose(raw, 1.0).astype(float))
    return None


def correct_margin(run: SpecRun, correct: np.ndarray) -> float | None:
    """Mean advantage of correct minus wrong samples, within groups holding both (``None``
    when no group does)."""
    adv = run.advantages
    right, wrong = [], []
    for g in range(run.matrix.num_groups):
        in_group = (run.matrix.groups == g) & ~np.isnan(correct) & ~np.isnan(adv)
        ok, bad = in_group & (correct == 1.0), in_group & (correct == 0.0)
        if ok.any() and bad.any():
            right.append(adv[ok])
            wrong.append(adv[bad])
    if not right:
        return None
    return float(np.concatenate(right).mean() - np.concatenate(wrong).mean())


def verdict(base: SpecRun, other: SpecRun, versus: Versus, correct: np.ndarray | None) -> str:
    """One line of plain text: ``other`` against ``base``."""
    parts = [_correct_part(base, other, correct)]
    parts.append(_probe_part(base, other))
    parts.append(
        f"the best sample changes in {sum(versus.best_changes)} of {len(versus.best_changes)} "
        "groups"
    )
    return f"{other.label} vs {base.label}: " + "; ".join(parts) + "."


def verdicts(comparison: Comparison) -> list[str]:
    """A verdict per other spec against the first (see the module docstring)."""
    correct = correct_mask(comparison.runs)
    base = comparison.runs[0]
    return [
        verdict(base, other, v, correct)
        for other, v in zip(comparison.runs[1:], comparison.versus, strict=True)
    ]


def _correct_part(base: SpecRun, other: SpecRun, correct: np.ndarray | None) -> str:
    if correct is None:
        return "no spec scores correctness, so neither can be said to teach right answers"
    a, b = correct_margin(base, correct), correct_margin(other, correct)
    if a is None or b is None:
        return "no group holds both a right and a wrong answer to tell them apart"
    margins = f"advantage margin {b:+.2f} vs {a:+.2f}"
    if abs(b - a) < MARGIN_TIE:
        return f"both push right answers up as hard ({margins})"
    harder = other.label if b > a else base.label
    return f"{harder} pushes right answers up harder ({margins})"


def _probe_part(base: SpecRun, other: SpecRun) -> str:
    pays_a = set(base.summary()["paying_probes"])
    pays_b = set(other.summary()["paying_probes"])
    if base.probes is None or other.probes is None:
        return "probes not scored"
    if not pays_a and not pays_b:
        return "neither pays for a hacking probe"
    said = []
    if pays_b - pays_a:
        said.append(f"only {other.label} pays for {', '.join(sorted(pays_b - pays_a))}")
    if pays_a - pays_b:
        said.append(f"only {base.label} pays for {', '.join(sorted(pays_a - pays_b))}")
    if pays_a & pays_b:
        said.append(f"both pay for {', '.join(sorted(pays_a & pays_b))}")
    return ", ".join(said)
