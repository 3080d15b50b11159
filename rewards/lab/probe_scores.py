"""The hacking probes' edits, scored once, so their payoff under any weights is a re-weighting.

:mod:`rewards.analysis.probes` edits a completion the ways a policy could exploit (strip tags, pad,
answer only, ...) and scores each edit. Here every sample's edits are scored in one composer call
and kept as raw matrices; :func:`payoffs` then gives, for any weight vectors, how much the total
rises on average when a probe's edit is made (``edit - original`` over the samples where the
probe applies and both are scored), and the share of samples where it rises. A probe "pays"
when its mean change is positive: a run could learn that edit.

As in :func:`rewards.analysis.probes.run_probes`, the originals are scored again in the same call
as the edits, so both sides are scored alike: without ``tokenize`` neither has token ids, and a
batch-relative component (``relative_length``) sees the originals and the edits together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewards.analysis.probes import answer_tag_of, perturbations
from rewards.completions.text import completion_text
from rewards.composer import score
from rewards.lab.matrix import ScoreMatrix, weighted_totals
from rewards.spec import RewardSpec

#: A mean change above this counts as paying (the probes' own ``rewarded`` test).
PAYS = 1e-9


@dataclass(frozen=True)
class ProbeScores:
    """Raw scores of every probe's edit of every sample.

    Attributes:
        names: probe names, ``(R,)``.
        base: ``(S, K)`` raw scores of the originals, scored alongside the edits.
        raw: ``(R, S, K)`` raw scores of the edits; NaN where not scored or not applicable.
        applicable: ``(R, S)``, whether the probe's edit applies to the sample.
    """

    names: tuple[str, ...]
    base: np.ndarray
    raw: np.ndarray
    applicable: np.ndarray


def probe_scores(
    spec: RewardSpec,
    prompts: Sequence[Any],
    completions: Sequence[Any],
    answers: Sequence[Any] | None = None,
    tokenize: Callable[[str], Sequence[int]] | None = None,
    completion_ids: Sequence[Sequence[int]] | None = None,
) -> ProbeScores:
    """Score each completion and each probe's edit of it with ``spec`` (one composer call).

    Without ``tokenize``, components that count tokens score neither the originals nor the
    edits (as in :func:`rewards.analysis.probes.run_probes`); with it, the originals keep
    ``completion_ids`` where given.
    """
    tag = answer_tag_of(spec)
    originals = [completion_text(c) for c in completions]
    edits = [perturbations(text, tag) for text in originals]
    names = tuple(name for name, _, _ in edits[0]) if edits else ()
    texts, where = list(originals), [(-1, i) for i in range(len(originals))]
    for i, per_sample in enumerate(edits):
        for r, (_, _, edited) in enumerate(per_sample):
            if edited is not None:
                texts.append(edited)
                where.append((r, i))
    k = len(spec.metric_names())
    raw = np.full((len(names), len(completions), k), np.nan)
    applicable = np.zeros((len(names), len(completions)), dtype=bool)
    if not texts:
        return ProbeScores(names, np.zeros((0, k)), raw, applicable)
    ids = None
    if tokenize is not None:
        ids = [
            list(completion_ids[i]) if r < 0 and completion_ids is not None else list(tokenize(t))
            for (r, i), t in zip(where, texts, strict=True)
        ]
    idx = [i for _, i in where]
    scored = score(
        spec,
        [prompts[i] for i in idx],
        texts,
        answers=None if answers is None else [answers[i] for i in idx],
        completion_ids=ids,
    )
    matrix = ScoreMatrix.from_scored(scored, [0] * len(scored)).raw
    for row, (r, i) in enumerate(where[len(originals) :], start=len(originals)):
        raw[r, i] = matrix[row]
        applicable[r, i] = True
    return ProbeScores(names, matrix[: len(originals)], raw, applicable)


@dataclass(frozen=True)
class Payoffs:
    """Each probe's effect under ``P`` weight vectors.

    Attributes:
        mean_delta: mean ``edit - original`` total, ``(P, R)``; NaN where no sample counts.
        rewarded_share: share of counted samples whose total rises, ``(P, R)``.
        counted: samples counted per probe, ``(R,)``.
    """

    names: tuple[str, ...]
    mean_delta: np.ndarray
    rewarded_share: np.ndarray
    counted: np.ndarray

    @property
    def pays(self) -> np.ndarray:
        """``(P, R)``: the probe's edit raises the total on average."""
        return np.nan_to_num(self.mean_delta, nan=0.0) > PAYS

    def at(self, p: int = 0) -> dict[str, dict[str, Any]]:
        """Point ``p`` as JSON-able ``{probe: {mean_delta, rewarded_share, counted, pays}}``."""
        return {
            name: {
                "mean_delta": _num(self.mean_delta[p, r]),
                "rewarded_share": _num(self.rewarded_share[p, r]),
                "counted": int(self.counted[r]),
                "pays": bool(self.pays[p, r]),
            }
            for r, name in enumerate(self.names)
        }


def _num(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def payoffs(probes: ProbeScores, weights: np.ndarray) -> Payoffs:
    """The probes' payoffs under ``weights`` ``(K,)`` or ``(P, K)`` (see the module docstring)."""
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    original = weighted_totals(probes.base, w)  # (P, S)
    r_count = len(probes.names)
    mean = np.full((w.shape[0], r_count), np.nan)
    share = np.full((w.shape[0], r_count), np.nan)
    counted = np.zeros(r_count, dtype=np.int64)
    for r in range(r_count):
        edited = weighted_totals(probes.raw[r], w)  # (P, S)
        # Which samples count does not depend on the weights: NaN totals come from NaN rows.
        ok = probes.applicable[r] & ~np.isnan(edited[0]) & ~np.isnan(original[0])
        counted[r] = int(ok.sum())
        if counted[r]:
            delta = edited[:, ok] - original[:, ok]
            mean[:, r] = delta.mean(axis=1)
            share[:, r] = (delta > PAYS).mean(axis=1)
    return Payoffs(probes.names, mean, share, counted)
