"""Temperature and nucleus (top-p) sampling on the device, one token per row.

On a GPU draws with the exponential race: ``argmax_i p_i / E_i`` with ``E_i ~ Exp(1)`` picks
token i with probability ``p_i`` (the Gumbel-max trick in another form, as nano-vllm's sampler
draws), so a step is a softmax, one random fill and an argmax: no host sync, no
``multinomial``. On the CPU, where a random fill of the vocabulary costs more than a running
sum, by inverting the running sum at one uniform draw a row.
Nucleus sampling keeps the smallest set of tokens whose mass reaches ``top_p`` (Holtzman et
al. 2020, "The Curious Case of Neural Text Degeneration", §3.1).

The decode loop's plain temperature sampling on CUDA (``fused``) runs as one Triton pass over
the logits with the noise drawn in the kernel (:mod:`engine.generation.sampling_kernel`); the
compiled race below is its fallback without Triton, and the torch code its reference.
"""

from __future__ import annotations

import functools

import torch

from engine.generation import sampling_kernel

# How ``sample_tokens(fused=True)`` samples: "kernel" (the Triton pass on CUDA, else
# "compiled") or "compiled" (the torch.compile race; for comparison in benchmarks).
FUSED_SAMPLER = "kernel"


def nucleus_filter(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Zero every token outside the top-p nucleus of each row: (N, V) -> (N, V), not renormalised.

    The most likely token always stays, so no row is left empty.
    """
    if top_p >= 1.0:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # (N, V)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (N, V)
    sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)
    return torch.zeros_like(probs).scatter_(-1, order, sorted_probs)


def _race(
    logits: torch.Tensor, race: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)  # (N, V)
    tokens = (logp.exp() / race).argmax(dim=-1)
    return tokens, logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


@functools.cache
def _fused_race():
    """:func:`_race` compiled: two passes over the logits instead of one kernel per operation."""
    return torch.compile(_race, dynamic=False)


def compiled_race(
    logits: torch.Tensor, temperature: float, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Temperature sampling through the compiled race: the unfused draws, in two passes."""
    race = torch.empty(logits.shape, dtype=torch.float32, device=logits.device)
    return _fused_race()(logits, race.exponential_(1.0, generator=generator), temperature)


def sample_tokens(
    logits: torch.Tensor,
    temperature: float,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    fused: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row of ``logits`` (N, V).

    Returns:
        ``(tokens, logprobs)``, both (N,): the tokens, and their log-probabilities under
        ``log_softmax(logits / temperature)`` (before the nucleus cut), which is what the
        trainer recomputes, so the two can be compared. ``temperature == 0`` is greedy, with
        log-probabilities at temperature 1. ``fused`` runs plain temperature sampling (for the
        GPU decode loop) through the Triton sampler where it applies (from the same
        distribution, with noise of its own), else through ``torch.compile`` (the same draws
        as unfused).
    """
    if fused and temperature > 0 and top_p >= 1.0:
        if FUSED_SAMPLER == "kernel" and sampling_kernel.supports(logits):
            return sampling_kernel.sample(logits, temperature, generator)
        return compiled_race(logits, temperature, generator)
    scaled = logits.float()
    if temperature > 0:
        scaled = scaled / temperature
    logp = torch.log_softmax(scaled, dim=-1)  # (N, V)
    if temperature == 0:
        tokens = logp.argmax(dim=-1)
    else:
        probs = nucleus_filter(logp.exp(), top_p)
        tokens = (inverse_cdf if probs.device.type == "cpu" else exponential_race)(probs, generator)
    return tokens, logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def exponential_race(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of ``probs`` (N, V), not necessarily normalised: ``argmax p_i / E_i``."""
    race = torch.empty_like(probs).exponential_(1.0, generator=generator)
    return (probs / race).argmax(dim=-1)


def inverse_cdf(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of ``probs`` (N, V), not necessarily normalised, by inverting its
    running sum at one uniform draw (inverse transform sampling; Devroye 1986, "Non-Uniform
    Random Variate Generation", §III.2): the first token whose running sum reaches ``u * total``
    with ``u`` in (0, 1], so a token of zero probability is never picked and none past the last.

    On the CPU it needs one draw a row where the race needs one a token: the race's exponential
    fill took 13 of a 103 ms decode step there (SmolLM2, 16 rows, 49,152 tokens)."""
    cdf = probs.cumsum(dim=-1)  # (N, V), non-decreasing
    uniform = torch.rand(
        (probs.shape[0], 1), generator=generator, dtype=cdf.dtype, device=cdf.device
    )
    target = (1.0 - uniform) * cdf[:, -1:]  # in (0, total]
    return torch.searchsorted(cdf, target).squeeze(-1)
