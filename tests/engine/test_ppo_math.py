"""PPO math against naive loops and hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from engine.trainers.ppo.controllers import (
    AdaptiveKLController,
    FixedKLController,
    RunningMoments,
)
from engine.trainers.ppo.formulas import (
    approx_kl,
    clip_fraction,
    entropy_from_logits,
    explained_variance,
    gae,
    last_token_index,
    logprobs_from_logits,
    masked_mean,
    masked_whiten,
    policy_loss,
    token_rewards,
    value_loss,
)


def naive_gae(rewards, values, mask, dones, gamma, lam):
    """GAE by its definition (Schulman et al. 2016, eq. 16), one row and one episode at a time.

    ``A_t = sum_l (gamma * lam)^l * delta_{t+l}`` over the rest of t's episode, where padding is
    skipped and ``V`` after an episode's last token is 0.
    """
    B, T = len(rewards), len(rewards[0])
    adv = [[0.0] * T for _ in range(B)]
    for b in range(B):
        real = [t for t in range(T) if mask[b][t]]
        episodes, current = [], []
        for t in real:
            current.append(t)
            if dones[b][t]:
                episodes.append(current)
                current = []
        if current:
            episodes.append(current)
        for episode in episodes:
            deltas = []
            for k, t in enumerate(episode):
                next_value = values[b][episode[k + 1]] if k + 1 < len(episode) else 0.0
                deltas.append(rewards[b][t] + gamma * next_value - values[b][t])
            for k, t in enumerate(episode):
                adv[b][t] = sum((gamma * lam) ** i * d for i, d in enumerate(deltas[k:]))
    return adv


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("gamma", "lam"), [(1.0, 0.95), (0.9, 0.8), (1.0, 1.0), (0.99, 0.0)])
def test_gae_matches_the_definition_with_dones_and_padding(seed, gamma, lam):
    g = torch.Generator().manual_seed(seed)
    B, T = 4, 9
    rewards = torch.randn(B, T, generator=g, dtype=torch.float64)
    values = torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = (torch.rand(B, T, generator=g) > 0.25).long()
    mask[0, 6:] = 0  # right padding, as after an end token
    mask[1, :3] = 0  # left padding
    mask[3] = 0  # an empty row
    dones = torch.rand(B, T, generator=g) > 0.7

    advantages, returns = gae(rewards, values, mask, gamma, lam, dones=dones)

    expected = naive_gae(
        rewards.tolist(), values.tolist(), mask.tolist(), dones.tolist(), gamma, lam
    )
    torch.testing.assert_close(advantages, torch.tensor(expected, dtype=torch.float64))
    assert torch.allclose(returns, (advantages + values) * mask)
    assert advantages[mask == 0].abs().max() == 0


def test_gae_without_dones_is_one_episode_per_row():
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    values = torch.tensor([[0.5, 0.25, 0.75, 9.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    # lam = gamma = 1: A_t = (sum of rewards from t) - V_t, the Monte Carlo advantage.
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    assert advantages.tolist() == [[0.5, 0.75, 0.25, 0.0]]
    assert returns.tolist() == [[1.0, 1.0, 1.0, 0.0]]
    # lam = 0: A_t = delta_t = r_t + gamma * V_{t+1} - V_t, with V = 0 after the last token.
    advantages, _ = gae(rewards, values, mask, gamma=0.5, lam=0.0)
    assert advantages[0].tolist() == pytest.approx([0.5 * 0.25 - 0.5, 0.5 * 0.75 - 0.25, 0.25, 0])


def test_token_rewards_put_the_score_on_the_last_real_token():
    scores = torch.tensor([1.0, 2.0, 3.0])
    logprobs = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, -1.0, -1.0], [0.0, 0.0, 0.0]])
    ref = torch.tensor([[-1.5, -2.0, -2.0], [-2.0, -1.0, -1.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [0, 0, 0]])
    rewards, kl = token_rewards(scores, logprobs, ref, mask, kl_coef=0.1)
    assert kl.tolist() == [[0.5, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    expected = torch.tensor([[-0.05, 0.0, 0.1 + 1.0], [-0.1, 2.0, 0.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(rewards, expected)
    assert last_token_index(mask).tolist() == [2, 1, 0]


def test_clipped_surrogate_against_hand_computed_values():
    ratios = torch.tensor([[1.5, 0.5, 1.0, 1.5, 9.0]])
    advantages = torch.tensor([[1.0, 1.0, -1.0, -1.0, 5.0]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])  # the last token is padding
    old = torch.zeros_like(ratios)
    loss, clipfrac, kl = policy_loss(ratios.log(), old, advantages, mask, clip_range=0.2)
    # max(-A r, -A clip(r)): 1.5,+1 -> -1.2 (clipped); 0.5,+1 -> -0.5; 1.0,-1 -> 1.0;
    # 1.5,-1 -> 1.5 (the pessimistic, unclipped term).
    assert loss.item() == pytest.approx((-1.2 - 0.5 + 1.0 + 1.5) / 4)
    assert clipfrac.item() == pytest.approx(3 / 4)
    expected_kl = sum((r - 1) - math.log(r) for r in (1.5, 0.5, 1.0, 1.5)) / 4
    assert kl.item() == pytest.approx(expected_kl)


def test_clipped_value_loss_against_hand_computed_values():
    values = torch.tensor([[1.0, 0.0, 3.0, 100.0]])
    old_values = torch.tensor([[0.5, 0.0, 2.0, 0.0]])
    returns = torch.tensor([[2.0, 1.0, 2.1, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    loss, vf_clipfrac = value_loss(values, old_values, returns, mask, clip_range_value=0.2)
    # V_clip = 0.7, 0.0, 2.2 -> errors max(1, 1.69), max(1, 1), max(0.81, 0.01)
    assert loss.item() == pytest.approx(0.5 * (1.69 + 1.0 + 0.81) / 3)
    assert vf_clipfrac.item() == pytest.approx(1 / 3)
    unclipped, _ = value_loss(values, old_values, returns, mask, clip_range_value=None)
    assert unclipped.item() == pytest.approx(0.5 * (1.0 + 1.0 + 0.81) / 3)


def test_approx_kl_and_clip_fraction_on_known_ratios():
    ratios = torch.tensor([[1.0, 1.1, 0.7, 1.3], [2.0, 0.1, 0.1, 0.1]])
    mask = torch.tensor([[1, 1, 1, 1], [0, 0, 0, 0]])
    kl = approx_kl(ratios.log(), mask)
    assert kl.item() == pytest.approx(sum((r - 1) - math.log(r) for r in (1.0, 1.1, 0.7, 1.3)) / 4)
    assert clip_fraction(ratios, mask, 0.2).item() == pytest.approx(0.5)
    assert approx_kl(torch.zeros(2, 3), torch.ones(2, 3)).item() == 0.0


def test_masked_statistics_ignore_padding():
    x = torch.tensor([[1.0, 2.0, 1e9], [3.0, 1e9, 1e9]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert masked_mean(x, mask).item() == pytest.approx(2.0)
    assert masked_mean(x, mask, dim=1).tolist() == pytest.approx([1.5, 3.0])
    white = masked_whiten(x, mask)
    assert white[mask == 0].tolist() == [0.0, 0.0, 0.0]
    real = white[mask == 1]
    assert real.mean().item() == pytest.approx(0.0, abs=1e-6)
    assert real.std().item() == pytest.approx(1.0, abs=1e-6)
    scaled = masked_whiten(x, mask, shift_mean=False)
    assert scaled[mask == 1].mean().item() == pytest.approx(2.0)


def test_logprobs_and_entropy_from_logits():
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0]]])
    tokens = torch.tensor([[1, 0]])
    assert logprobs_from_logits(logits, tokens)[0].tolist() == pytest.approx(
        [math.log(0.5), math.log(0.75)]
    )
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert entropy_from_logits(logits)[0].tolist() == pytest.approx([math.log(2.0), h])


def test_explained_variance():
    returns = torch.tensor([[1.0, 2.0, 3.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    assert explained_variance(returns.clone(), returns, mask) == pytest.approx(1.0)
    assert explained_variance(torch.full_like(returns, 2.0), returns, mask) == pytest.approx(0.0)
    assert math.isnan(explained_variance(returns, torch.ones_like(returns), mask))
    # Returns equal but for rounding (a step whose groups all scored alike, normalised per
    # group): undefined, not -1e12 (issue 43's GPU run logged -7.2e12).
    level = torch.full_like(returns, 0.1) + torch.tensor([[0.0, 1e-7, -1e-7, 0.0]])
    assert math.isnan(explained_variance(returns, level, mask))


def test_kl_controllers():
    fixed = FixedKLController(0.05)
    fixed.update(100.0, 64)
    assert fixed.value == 0.05
    adaptive = AdaptiveKLController(0.1, target=6.0, horizon=10_000)
    adaptive.update(12.0, 100)  # error clipped to +0.2
    assert adaptive.value == pytest.approx(0.1 * (1 + 0.2 * 100 / 10_000))
    adaptive.update(3.0, 100)  # error clipped to -0.2
    assert adaptive.value == pytest.approx(0.1 * 1.002 * 0.998)
    before = adaptive.value
    adaptive.update(6.6, 1000)  # error 0.1
    assert adaptive.value == pytest.approx(before * (1 + 0.1 * 0.1))


def test_running_moments_match_the_whole_stream():
    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(n, generator=g) * 3 + 1 for n in (5, 1, 17, 8)]
    moments = RunningMoments()
    for batch in batches:
        moments.update(batch)
    everything = torch.cat(batches).double()
    assert moments.count == 31
    assert moments.mean == pytest.approx(everything.mean().item())
    assert moments.std == pytest.approx(everything.std(unbiased=False).item())
    assert RunningMoments(**moments.state_dict()).mean == moments.mean
