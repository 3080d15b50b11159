"""GRPO advantages as TRL 1.16 computes them, for many weight vectors at once.

Source: ``trl/trainer/grpo_trainer.py`` (``GRPOTrainer._generate_and_score_completions``):

- ``sum_then_normalize`` (default): ``r = nansum(w * raw)`` (rows no component scored are NaN),
  ``A = r - nanmean_group(r)``, divided by ``nanstd_group(r) + 1e-4`` (``scale_rewards="group"``)
  or by the batch's ``nanstd(r) + 1e-4`` (``"batch"``), or not divided (``"none"``);
- ``normalize_then_sum`` (GDPO): each component normalised in its group,
  ``z_k = (raw_k - nanmean_group) / (nanstd_group + 1e-4)``, then ``r = nansum(w * z)``,
  ``A = (r - nanmean(r)) / (nanstd(r) + 1e-4)`` over the batch (``scale_rewards`` is not read);
- advantages of unscorable samples (NaN) become 0 (``torch.nan_to_num``).

``nanstd`` is Bessel-corrected and NaN for fewer than two values (``trl.trainer.utils.nanstd``).
Where we depart: groups are any ids (TRL: consecutive blocks of ``num_generations``, which is the
same when ids are consecutive); we compute in float64 (TRL in float32); and a group counts as
zero-variance when the std of its learner score (``r`` above) is at most 1e-8 or undefined (under
two scored samples), per group in both modes (TRL logs ``frac_reward_zero_std`` from the batch
std under ``normalize_then_sum``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewards.lab.matrix import weighted_totals

#: TRL's ``scale_rewards`` choices.
SCALE_REWARDS = ("group", "batch", "none")
#: TRL's ``multi_objective_aggregation`` choices (GRPOConfig; RLOOConfig 1.16 has only the first).
AGGREGATIONS = ("sum_then_normalize", "normalize_then_sum")
#: TRL's denominator guard, ``std + 1e-4``.
STD_EPS = 1e-4
#: A group std at or below this is zero (``torch.isclose(std, 0)``; rewards.analysis.diagnostics
# too).
ZERO_STD = 1e-8


@dataclass(frozen=True)
class Advantages:
    """The learner's view of a batch under ``P`` weight vectors.

    Attributes:
        totals: the weighted totals TRL logs as ``reward``, ``(P, S)``; NaN: unscorable.
        scores: what the advantage normalises, ``(P, S)``: the totals under
            ``sum_then_normalize``, the weighted sum of group-normalised components otherwise.
        advantages: ``(P, S)``, 0 for unscorable samples.
        group_std: std of ``scores`` per group, ``(P, G)``; NaN for groups under two scored.
        zero_std: whether each group's std is zero (or undefined), ``(P, G)``.
        centred: each component's part of the advantage, ``(P, S, K)``, summing over K to
            ``advantages`` (only when asked for; else ``None``).
    """

    totals: np.ndarray
    scores: np.ndarray
    advantages: np.ndarray
    group_std: np.ndarray
    zero_std: np.ndarray
    centred: np.ndarray | None = None

    @property
    def zero_std_fraction(self) -> np.ndarray:
        """Share of groups with zero variance, ``(P,)``."""
        return self.zero_std.mean(axis=1)


def _group_mean_std(values: np.ndarray, onehot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NaN-aware per-group mean and Bessel std of ``values`` ``(..., S)``; ``onehot`` ``(S, G)``.

    Returns ``(..., G)`` arrays: mean NaN for an empty group, std NaN under two values (nanstd).
    """
    valid = ~np.isnan(values)
    filled = np.where(valid, values, 0.0)
    count = valid.astype(np.float64) @ onehot  # (..., G)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (filled @ onehot) / count
        dev = np.where(valid, values - _spread(mean, onehot), 0.0)
        var = ((dev * dev) @ onehot) / (count - 1)
    var = np.where(count > 1, var, np.nan)
    return mean, np.sqrt(var)


def _spread(per_group: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """``(..., G)`` values to ``(..., S)``, each sample taking its group's."""
    return per_group[..., onehot.argmax(axis=1)]


def _batch_mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NaN-aware mean and Bessel std over the last axis, keeping it (``(..., 1)``)."""
    valid = ~np.isnan(values)
    count = valid.sum(axis=-1, keepdims=True)
    filled = np.where(valid, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=-1, keepdims=True) / count
        dev = np.where(valid, values - mean, 0.0)
        var = (dev * dev).sum(axis=-1, keepdims=True) / (count - 1)
    return mean, np.sqrt(np.where(count > 1, var, np.nan))


def one_hot(groups: np.ndarray, num_groups: int) -> np.ndarray:
    """``(S, G)`` indicator of each sample's group."""
    out = np.zeros((len(groups), num_groups))
    out[np.arange(len(groups)), groups] = 1.0
    return out


def grpo_advantages(
    raw: np.ndarray,
    weights: np.ndarray,
    groups: np.ndarray,
    num_groups: int | None = None,
    *,
    scale_rewards: str = "group",
    aggregation: str = "sum_then_normalize",
    with_parts: bool = False,
) -> Advantages:
    """TRL's GRPO advantages of ``raw`` ``(S, K)`` under ``weights`` ``(K,)`` or ``(P, K)``.

    ``groups`` holds dense group indices ``(S,)``; ``with_parts`` also returns each component's
    part of the advantage (``Advantages.centred``). See the module docstring for the formulas.
    """
    if scale_rewards not in SCALE_REWARDS:
        raise ValueError(f"scale_rewards: must be one of {', '.join(SCALE_REWARDS)}")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation: must be one of {', '.join(AGGREGATIONS)}")
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))  # (P, K)
    onehot = one_hot(groups, int(num_groups or (groups.max() + 1 if len(groups) else 0)))
    totals = weighted_totals(raw, w)  # (P, S)
    unscorable = np.isnan(raw).all(axis=1)  # (S,)
    if aggregation == "sum_then_normalize":
        scores = totals
        mean, std = _group_mean_std(scores, onehot)  # (P, G)
        if scale_rewards == "batch":
            denom = _batch_mean_std(scores)[1] + STD_EPS  # (P, 1)
        elif scale_rewards == "group":
            denom = _spread(std, onehot) + STD_EPS  # (P, S)
        else:
            denom = np.ones(1)
        # Each component's centred contribution over the same denominator: the parts sum to A.
        parts = None
        if with_parts:
            # A weight is constant within a point, so component k's contribution centred on its
            # group mean is w_k * (c_k - mean_group(c_k)): the group means are taken once.
            c = np.where(np.isnan(raw), 0.0, raw)  # an unscored part adds 0 (nansum)
            c = np.where(unscorable[:, None], np.nan, c)  # (S, K)
            c_mean = _group_mean_std(c.T, onehot)[0]  # (K, G)
            centred = c - _spread(c_mean, onehot).T  # (S, K)
            parts = w[:, None, :] * centred[None] / _as_parts(denom)  # (P, S, K)
        advantages = (scores - _spread(mean, onehot)) / denom
    else:
        g_mean, g_std = _group_mean_std(raw.T, onehot)  # (K, G)
        z = (raw - _spread(g_mean, onehot).T) / (_spread(g_std, onehot).T + STD_EPS)  # (S, K)
        z = np.where(np.isnan(z), 0.0, z)  # nansum: a NaN part adds nothing
        scores = z @ w.T  # (S, P)
        scores = np.where(unscorable[:, None], np.nan, scores).T  # (P, S)
        b_mean, b_std = _batch_mean_std(scores)
        advantages = (scores - b_mean) / (b_std + STD_EPS)
        std = _group_mean_std(scores, onehot)[1]
        parts = None
        if with_parts:
            # w_k z_k over the batch's denominator, centred on its mean over scorable samples:
            # the parts sum over k to (r - nanmean(r)) / (nanstd(r) + 1e-4).
            parts = z[None] * w[:, None, :] / (b_std[..., None] + STD_EPS)  # (P, S, K)
            parts = parts - parts[:, ~unscorable, :].mean(axis=1, keepdims=True)
    advantages = np.nan_to_num(advantages, nan=0.0)
    if parts is not None:
        parts = np.where(unscorable[None, :, None], 0.0, np.nan_to_num(parts, nan=0.0))
    zero = ~(std > ZERO_STD)  # NaN (under two scored) counts as no signal
    return Advantages(totals, scores, advantages, std, zero, parts)


def _as_parts(denom: np.ndarray) -> np.ndarray:
    """A denominator of shape ``(P, S)``, ``(P, 1)`` or ``(1,)`` broadcast over components."""
    return denom[..., None] if denom.ndim == 2 else denom
