"""The one-pass Triton sampler in Triton's interpreter, on the CPU (float32/float16 logits: the
interpreter's bfloat16 is wrong): its log-probabilities, the distribution it draws from, its
seeds, and the vocabulary split over several programs per row."""

from __future__ import annotations

import pytest
import torch

from engine.generation import sampling_kernel


@pytest.fixture
def interpreted(monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    sampling_kernel._kernels.cache_clear()
    yield
    sampling_kernel._kernels.cache_clear()


def sample(logits: torch.Tensor, temperature: float, seed: int, splits: int = 1):
    rows = logits.shape[0]
    tokens = torch.full((rows,), -1, dtype=torch.long)
    logprobs = torch.full((rows,), float("nan"))
    seed_t = torch.tensor([seed], dtype=torch.int64)
    sampling_kernel.launch(logits, seed_t, temperature, splits, tokens, logprobs)
    return tokens, logprobs


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs.double() * counts.sum()
    return (((counts.double() - expected) ** 2) / expected).sum().item()


def test_logprobs_are_the_log_softmax_of_the_sampled_tokens(interpreted):
    torch.manual_seed(0)
    logits = torch.randn(6, 5000) * 4
    tokens, logprobs = sample(logits, 0.7, seed=1, splits=2)
    assert ((tokens >= 0) & (tokens < 5000)).all()
    reference = torch.log_softmax(logits / 0.7, dim=-1).gather(1, tokens[:, None])[:, 0]
    assert (logprobs - reference).abs().max().item() < 1e-4
    half = logits[:, :300].half()  # a row narrower than one tile, in float16
    tokens, logprobs = sample(half, 1.3, seed=2)
    reference = torch.log_softmax(half.float() / 1.3, dim=-1).gather(1, tokens[:, None])[:, 0]
    assert (logprobs - reference).abs().max().item() < 1e-4


def test_draws_follow_the_softmax_at_the_temperature(interpreted):
    """Chi-square over 7 tokens against softmax(logits / T) (6 degrees of freedom: 22.5 is the
    0.999 quantile); the same counts reject a temperature 1.5x off either way (which 600 draws
    do 999 times in 1,000, simulated with torch.multinomial) and the noise-free argmax."""
    logits = torch.tensor([1.5, 1.0, 0.6, 0.0, -0.3, -0.8, -1.5])
    rows, temperature = 600, 0.8
    tokens, _ = sample(logits.repeat(rows, 1), temperature, seed=7)
    counts = torch.bincount(tokens, minlength=7)
    assert chi_square(counts, torch.softmax(logits / temperature, -1)) < 22.5
    assert chi_square(counts, torch.softmax(logits / (temperature * 1.5), -1)) > 22.5
    assert chi_square(counts, torch.softmax(logits / (temperature / 1.5), -1)) > 22.5
    assert counts[0] < rows // 2  # not the argmax


def test_a_dominant_token_in_a_vocabulary_of_several_tiles(interpreted):
    """One token holds ~60% of the mass of 2,500 (three tiles), the rest spread: its frequency
    within 4 standard errors, the others drawn from all over the row, across the split."""
    torch.manual_seed(1)
    logits = torch.randn(2500) * 0.5
    logits[1234] = 8.5
    p = torch.softmax(logits.double(), -1)[1234].item()
    rows = 200
    tokens, _ = sample(logits.repeat(rows, 1), 1.0, seed=3, splits=2)
    freq = (tokens == 1234).double().mean().item()
    assert abs(freq - p) < 4 * (p * (1 - p) / rows) ** 0.5
    others = tokens[tokens != 1234]
    assert len(set(others.tolist())) > 0.9 * len(others)  # a wide tail: few repeats
    assert (others < 2048).any() and (others >= 2048).any()  # drawn from both programs


def test_the_same_seed_repeats_and_another_differs(interpreted):
    torch.manual_seed(2)
    logits = torch.randn(8, 700)
    first, lp_first = sample(logits, 1.0, seed=11)
    again, lp_again = sample(logits, 1.0, seed=11)
    other, _ = sample(logits, 1.0, seed=12)
    assert torch.equal(first, again) and torch.equal(lp_first, lp_again)
    assert (first != other).sum() >= 6
    high, _ = sample(logits, 1.0, seed=11 + 2**40)  # the seed's high word counts too
    assert (first != high).sum() >= 6


def test_splitting_the_vocabulary_changes_nothing(interpreted):
    """Programs per row 1, 2 and 3 (tiles of 1,024 columns): the same tokens, the same
    log-probabilities up to float32 rounding of the merged sums."""
    torch.manual_seed(3)
    logits = torch.randn(5, 9000) * 3
    tokens, logprobs = sample(logits, 0.9, seed=5, splits=1)
    for splits in (2, 3):
        split_tokens, split_logprobs = sample(logits, 0.9, seed=5, splits=splits)
        assert torch.equal(split_tokens, tokens)
        torch.testing.assert_close(split_logprobs, logprobs, atol=1e-5, rtol=0)


def test_minus_infinity_logits_are_never_drawn(interpreted):
    """A first program whose columns are all -inf, and masked columns among the rest."""
    torch.manual_seed(4)
    logits = torch.randn(6, 9000)
    logits[:, :4096] = float("-inf")
    logits[:, 5000::2] = float("-inf")
    tokens, logprobs = sample(logits, 1.0, seed=9, splits=3)
    assert torch.isfinite(logits.gather(1, tokens[:, None])).all()
    reference = torch.log_softmax(logits, dim=-1).gather(1, tokens[:, None])[:, 0]
    assert torch.isfinite(logprobs).all()
    assert (logprobs - reference).abs().max().item() < 1e-4


def test_the_kernel_takes_only_logits_it_handles():
    """CPU tensors (and anything else it does not support) go to the torch sampler."""
    assert not sampling_kernel.supports(torch.zeros(4, 10))
    assert sampling_kernel.split_columns(151_936, 5) == (30_720, 5)
    assert sampling_kernel.split_columns(2500, 8) == (1024, 3)  # never an empty program
    assert sampling_kernel.split_columns(7, 4) == (64, 1)


def test_sample_tokens_fused_goes_through_the_operator(interpreted, monkeypatch):
    """sample_tokens(fused=True) -> the registered operator -> the kernels, with the seed drawn
    from the caller's generator: on the CPU only the device gate and the SM count are stood in
    for (the interpreter runs the kernels themselves)."""
    from engine.generation import sampler

    monkeypatch.setattr(sampling_kernel, "supports", lambda logits: True)
    monkeypatch.setattr(sampling_kernel, "default_splits", lambda rows, device: 2)
    torch.manual_seed(5)
    logits = torch.randn(4, 3000)

    def draw(seed):
        generator = torch.Generator().manual_seed(seed)
        return sampler.sample_tokens(logits, 0.9, 1.0, generator, fused=True)

    (tokens, logprobs), (again, _), (other, _) = draw(1), draw(1), draw(2)
    assert torch.equal(tokens, again) and not torch.equal(tokens, other)
    reference = torch.log_softmax(logits / 0.9, dim=-1).gather(1, tokens[:, None])[:, 0]
    assert (logprobs - reference).abs().max().item() < 1e-4
    seed = sampling_kernel.draw_seed(logits.device, torch.Generator().manual_seed(1))
    direct, _ = sample(logits, 0.9, seed=int(seed), splits=2)
    assert torch.equal(direct, tokens)  # the same draw as the kernels launched by hand
