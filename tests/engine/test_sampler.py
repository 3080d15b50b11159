"""The sampler's draws on CPU: temperature and nucleus frequencies, greedy log-probabilities,
the fused race against the unfused one, and each draw's handling of zero mass."""

from __future__ import annotations

import pytest
import torch

from engine.generation.sampler import nucleus_filter, sample_tokens


def test_temperature_sampling_matches_the_softmax_frequencies():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, 0.5]]).repeat(40_000, 1)
    gen = torch.Generator().manual_seed(0)
    tokens, logprobs = sample_tokens(logits, 0.7, 1.0, gen)
    expected = torch.softmax(logits[0] / 0.7, dim=-1)
    freq = torch.bincount(tokens, minlength=5).double() / len(tokens)
    assert torch.allclose(freq, expected.double(), atol=0.01)
    torch.testing.assert_close(logprobs, expected.log()[tokens])


def test_top_p_keeps_the_smallest_nucleus_and_renormalises():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])).repeat(40_000, 1)
    kept = nucleus_filter(torch.softmax(logits[:1], -1), 0.75)
    assert kept[0].tolist() == pytest.approx([0.5, 0.3, 0.0, 0.0])
    tokens, _ = sample_tokens(logits, 1.0, 0.75, torch.Generator().manual_seed(1))
    freq = torch.bincount(tokens, minlength=4).double() / len(tokens)
    assert freq[2:].sum() == 0
    assert freq[0].item() == pytest.approx(0.5 / 0.8, abs=0.01)
    # a nucleus smaller than the top token still keeps it
    tokens, _ = sample_tokens(logits[:100], 1.0, 0.1, torch.Generator().manual_seed(2))
    assert tokens.eq(0).all()


def test_greedy_takes_the_argmax_with_temperature_one_logprobs():
    logits = torch.randn(6, 11)
    tokens, logprobs = sample_tokens(logits, 0.0)
    assert tokens.tolist() == logits.argmax(-1).tolist()
    torch.testing.assert_close(logprobs, torch.log_softmax(logits, -1).max(-1).values)


def test_the_fused_sampler_math_draws_what_the_unfused_race_draws():
    from engine.generation.sampler import _race, exponential_race

    logits = torch.randn(64, 50)
    probs = torch.softmax(logits / 0.7, dim=-1)
    unfused = exponential_race(probs, torch.Generator().manual_seed(4))
    race = torch.empty(64, 50).exponential_(1.0, generator=torch.Generator().manual_seed(4))
    tokens, logprobs = _race(logits, race, 0.7)
    assert torch.equal(tokens, unfused)
    torch.testing.assert_close(logprobs, probs.log().gather(-1, tokens[:, None])[:, 0])


@pytest.mark.parametrize("draw", ["inverse_cdf", "exponential_race"])
def test_each_draw_follows_unnormalised_probabilities_and_never_picks_a_zero(draw):
    from engine.generation import sampler

    # A nucleus cut leaves zeros anywhere and a mass below 1; the first and last tokens are 0.
    weights = torch.tensor([0.0, 0.2, 0.0, 0.1, 0.3, 0.0, 0.0])
    tokens = getattr(sampler, draw)(weights.repeat(60_000, 1), torch.Generator().manual_seed(5))
    freq = torch.bincount(tokens, minlength=7).double() / len(tokens)
    assert freq[weights == 0].sum() == 0
    assert torch.allclose(freq, (weights / weights.sum()).double(), atol=0.01)
    one = torch.zeros(3, 9)
    one[:, 8] = 1e-30  # all the mass on the last token, however small
    assert getattr(sampler, draw)(one, None).tolist() == [8, 8, 8]
