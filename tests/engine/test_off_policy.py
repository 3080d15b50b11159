"""Importance weights for a sampler that is a copy of the policy: each completion's ratio,
the cap, and a gradient scaled by the weight while the values stay the policy's."""

from __future__ import annotations

import math

import torch

from engine.trainers.off_policy import RATIO_CAP, sequence_weights, straight_through


def test_a_completion_is_weighted_by_its_sequence_ratio_over_counted_tokens():
    logps = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -0.5, -9.0]])
    sampler = torch.tensor([[-1.1, -1.8, -3.0], [-0.5, -1.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])  # the last token of row 2 not counted
    weights = sequence_weights(logps, sampler, mask)
    assert weights.shape == (2, 1)
    assert math.isclose(weights[0, 0].item(), math.exp(0.1 - 0.2), rel_tol=1e-6)
    assert math.isclose(weights[1, 0].item(), math.exp(0.5), rel_tol=1e-6)


def test_completions_whose_ratio_passes_the_cap_are_left_out():
    logps = torch.tensor([[0.0], [0.0]])
    sampler = torch.tensor([[-math.log(RATIO_CAP) - 0.01], [-math.log(RATIO_CAP) + 0.01]])
    weights = sequence_weights(logps, sampler, torch.ones(2, 1))
    assert weights[0, 0] == 0  # pi/mu just above the cap
    assert 0 < weights[1, 0] <= RATIO_CAP


def test_the_weights_carry_no_gradient():
    logps = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    weights = sequence_weights(logps, torch.tensor([[-1.5, -2.5]]), torch.ones(1, 2))
    assert not weights.requires_grad


def test_straight_through_keeps_values_and_scales_the_gradient():
    logps = torch.tensor([[-1.0, -2.0], [-0.5, -0.7]], requires_grad=True)
    weights = torch.tensor([[2.0], [0.0]])
    weighted = straight_through(logps, weights)
    assert torch.equal(weighted.detach(), logps.detach())
    # The loss of TRL's GRPO at one update per generation: ratio exp(logp - logp.detach()).
    advantages = torch.tensor([[1.5], [-1.0]])
    (-(weighted - weighted.detach()).exp() * advantages).sum().backward()
    assert torch.allclose(logps.grad, -weights * advantages * torch.ones(2, 2))
