"""The reward lab's core: totals, TRL's advantages, sweeps, probe payoffs against full re-scores."""

import math
import random

import numpy as np
import pytest

from rewards.analysis.diagnostics import group_diagnostics
from rewards.analysis.probes import answer_tag_of, perturbations
from rewards.composer import score
from rewards.lab.advantages import grpo_advantages
from rewards.lab.batch import Generations
from rewards.lab.matrix import ScoreMatrix, weighted_totals
from rewards.lab.sweep import SweepAxis, grid_weights, sweep
from rewards.spec import RewardSpec
from tests.rewards.lab_batch import RULE_BASED, generations, random_spec

BATCH = generations()


def with_weights(spec: RewardSpec, weights) -> RewardSpec:
    data = spec.to_dict()
    for comp, w in zip(data["components"], weights, strict=True):
        comp["weight"] = float(w)
    return RewardSpec.from_dict(data)


def test_every_rule_based_component_is_covered_by_the_random_specs():
    rng = random.Random(1)
    seen = {c.name for _ in range(40) for c in random_spec(rng).components}
    assert seen == set(RULE_BASED)


@pytest.mark.parametrize("seed", range(6))
def test_totals_equal_the_composers_exactly(seed):
    spec = random_spec(random.Random(seed))
    scored = BATCH.score(spec)
    matrix = ScoreMatrix.from_scored(scored, BATCH.groups)
    want = [np.nan if s.total is None else s.total for s in scored]
    np.testing.assert_array_equal(matrix.totals(), want)  # bit for bit, NaN where unscored


@pytest.mark.parametrize("seed", range(4))
def test_sweep_equals_a_full_rescore_at_every_grid_point(seed):
    rng = random.Random(100 + seed)
    spec = random_spec(rng, size=4)
    base = BATCH.matrix(spec)
    probes = BATCH.probes(spec)
    a, b = rng.sample(base.names, 2)
    axes = [SweepAxis.linspace(a, -1.0, 2.0, 4), SweepAxis.linspace(b, 0.0, 1.5, 3)]
    result = sweep(base, axes, probes=probes)
    weights = grid_weights(base, axes)
    totals = weighted_totals(base.raw, weights)
    assert weights.shape == (12, 4)
    for p, w in enumerate(weights):
        point = with_weights(spec, w)
        scored = BATCH.score(point)  # the whole composer again, on the new spec
        np.testing.assert_array_equal(
            totals[p], [np.nan if s.total is None else s.total for s in scored]
        )
        diag = group_diagnostics(scored, list(BATCH.groups))
        assert result.zero_std_fraction[p] == diag.zero_std_fraction
        # Probe payoffs: the originals and every edit scored again by the composer under the
        # point's spec, in one call as probe_scores does, then mean(edit - original).
        edits = [
            (r, i, edited)
            for i, text in enumerate(BATCH.completions)
            for r, (_, _, edited) in enumerate(perturbations(text, answer_tag_of(spec)))
            if edited is not None
        ]
        texts = list(BATCH.completions) + [t for _, _, t in edits]
        idx = list(range(len(BATCH))) + [i for _, i, _ in edits]
        answers = [BATCH.answers[i] for i in idx]
        full = [s.total for s in score(point, [BATCH.prompts[i] for i in idx], texts, answers)]
        for r in range(len(probes.names)):
            deltas = [
                full[len(BATCH) + row] - full[i]
                for row, (rr, i, _) in enumerate(edits)
                if rr == r and full[len(BATCH) + row] is not None and full[i] is not None
            ]
            got = result.probes.mean_delta[p, r]
            assert (not deltas and np.isnan(got)) or got == pytest.approx(
                np.mean(deltas), abs=1e-12
            )
        # Correctness correlation where the spec has it: a naive Pearson over scored pairs.
        if "correctness" in base.components:
            pairs = [
                (s.total, s.raw("correctness"))
                for s in scored
                if s.total is not None and s.raw("correctness") is not None
            ]
            want = _pearson([x for x, _ in pairs], [y for _, y in pairs])
            got = result.correctness_corr[p]
            assert (want is None and np.isnan(got)) or got == pytest.approx(want, abs=1e-9)


def _pearson(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-24 or syy <= 1e-24:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)


def trl_advantages(rewards_per_func, weights, num_generations, scale_rewards, aggregation):
    """TRL 1.16's lines (GRPOTrainer._generate_and_score_completions), in float64."""
    import torch
    from trl.trainer.utils import nanstd

    rewards_per_func = torch.tensor(rewards_per_func, dtype=torch.float64)
    reward_weights = torch.tensor(weights, dtype=torch.float64)
    unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)
    if aggregation == "sum_then_normalize":
        rewards = (rewards_per_func * reward_weights.unsqueeze(0)).nansum(dim=1)
        rewards[unscorable_mask] = torch.nan
        mean_grouped = torch.nanmean(rewards.view(-1, num_generations), dim=1)
        mean_grouped = mean_grouped.repeat_interleave(num_generations, dim=0)
        if scale_rewards in ["group", "none"]:
            std = nanstd(rewards.view(-1, num_generations), dim=1)
            std = std.repeat_interleave(num_generations, dim=0)
        else:
            std = nanstd(rewards).expand_as(rewards)
        advantages = rewards - mean_grouped
        if scale_rewards != "none":
            advantages = advantages / (std + 1e-4)
    else:
        grouped = rewards_per_func.view(-1, num_generations, len(weights))
        mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
        std_k = nanstd(grouped, dim=1, keepdim=True)
        reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, len(weights))
        rewards = (reward_k * reward_weights.unsqueeze(0)).nansum(dim=1)
        rewards[unscorable_mask] = torch.nan
        std = nanstd(rewards).expand_as(rewards)
        advantages = (rewards - torch.nanmean(rewards)) / (std + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0).numpy()


@pytest.mark.parametrize("aggregation", ["sum_then_normalize", "normalize_then_sum"])
@pytest.mark.parametrize("scale_rewards", ["group", "batch", "none"])
def test_advantages_follow_trl(scale_rewards, aggregation):
    rng = np.random.default_rng(0)
    raw = rng.choice([0.0, 0.5, 1.0, np.nan], size=(24, 3), p=[0.4, 0.2, 0.3, 0.1])
    raw[5] = np.nan  # a sample no component scores
    raw[8:12, 0] = 1.0  # a group where one component is constant
    weights = np.array([1.0, -0.5, 0.25])
    groups = np.repeat(np.arange(6), 4)
    got = grpo_advantages(
        raw, weights, groups, scale_rewards=scale_rewards, aggregation=aggregation, with_parts=True
    )
    want = trl_advantages(raw, weights, 4, scale_rewards, aggregation)
    # TRL's nanstd divides integer counts (float32), so agreement is to float32 precision.
    np.testing.assert_allclose(got.advantages[0], want, rtol=1e-6, atol=1e-9)
    # Each component's part of the advantage adds up to the advantage.
    np.testing.assert_allclose(got.centred[0].sum(axis=1), got.advantages[0], atol=1e-12)


def test_many_weight_vectors_equal_one_at_a_time():
    spec = random_spec(random.Random(7), size=3)
    m = BATCH.matrix(spec)
    weights = np.random.default_rng(1).uniform(-2, 2, size=(5, 3))
    many = grpo_advantages(m.raw, weights, m.groups, with_parts=True)
    for p in range(5):
        one = grpo_advantages(m.raw, weights[p], m.groups, with_parts=True)
        np.testing.assert_allclose(many.advantages[p], one.advantages[0], atol=1e-12)
        np.testing.assert_array_equal(many.zero_std[p], one.zero_std[0])


def test_onsets_mark_where_a_probe_starts_paying():
    # Right answers with their working: "answer only" loses the strict format (-1) and gains
    # length reward; it pays once the length weight outgrows the format's.
    texts = [
        f"<think>{a} + 5 = {a + 5}, checked twice.</think><answer>{a + 5}</answer>"
        for a in range(8)
    ]
    batch = Generations(["p"] * 8, texts, [0, 0, 0, 0, 1, 1, 1, 1], [str(a + 5) for a in range(8)])
    spec = RewardSpec.from_dict(
        {
            "components": [
                {"name": "format", "weight": 1.0, "params": {"mode": "strict"}},
                {
                    "name": "conciseness",
                    "weight": 0.0,
                    "params": {"unit": "characters", "max_len": 100},
                },
            ]
        }
    )
    m = batch.matrix(spec)
    result = sweep(m, [SweepAxis.linspace("conciseness", 0.0, 10.0, 21)], probes=batch.probes(spec))
    r = result.probes.names.index("answer only")
    pays = result.probes.pays[:, r]
    assert not pays[0] and pays[-1]
    first = int(np.argmax(pays))
    assert pays[first:].all()
    assert result.onsets()["answer only"] == [[pytest.approx(result.axes[0].values[first])]]
    gain = result.probes.mean_delta[:, r]
    assert gain[first] > 0 >= gain[first - 1]


def test_sweep_refuses_bad_axes():
    m = BATCH.matrix(random_spec(random.Random(3), size=2))
    with pytest.raises(ValueError, match="num: 2 to 1000"):
        SweepAxis.linspace(m.names[0], 0, 1, 5000)
    with pytest.raises(ValueError, match="start: "):
        SweepAxis.linspace(m.names[0], -1000, 1, 5)
    with pytest.raises(KeyError, match="no component named 'nope'"):
        grid_weights(m, [SweepAxis.linspace("nope", 0, 1, 3)])


def test_composer_totals_for_reference():
    # The batch exercises unscored samples (an empty completion under language), so the
    # NaN paths above are not vacuous.
    spec = RewardSpec.from_dict({"components": [{"name": "language"}]})
    assert any(s.total is None for s in score(spec, None, list(BATCH.completions)))
