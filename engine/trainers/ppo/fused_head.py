"""Log-probabilities and entropies of the next tokens without the logits over the vocabulary.

The LM head's product and the log-softmax run together over tiles of tokens x vocabulary with
TRL 1.16's ``ChunkedLogProbFunction`` (``trl.kernels``, the kernel behind its GRPO loss: an
online log-sum-exp in Triton on a GPU, torch ops elsewhere; the backward recomputes each tile),
so a forward never holds ``(B, T, V)`` logits (5 GiB in bf16 for 64 completions of 256 tokens at
a 151,936-token vocabulary) nor their float32 copies. It applies where the logits are exactly
``hidden @ W.T (+ b)``; models that scale or soft-cap them keep the materialised path.
"""

from __future__ import annotations

import torch
from torch import nn
from trl.kernels import ChunkedLogProbFunction

from engine.trainers.ppo.formulas import ENTROPY_MODES

# Vocabulary columns per tile (TRL's own choice for its GRPO loss).
VOCAB_CHUNK = 32768


# Config fields that change the logits after the head's product.
def head_logprobs(
    head: nn.Linear,
    hidden: torch.Tensor,
    targets: torch.Tensor,
    temperature: float,
    entropy: str = "skip",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``log softmax(h W^T / temperature)[target]`` and the entropy of that distribution.

    hidden (B, T, d) are the states that predict targets (B, T). ``entropy``: ``grad``,
    ``detached`` (a metric only) or ``skip`` (zeros, not computed), as
    :func:`~engine.trainers.ppo.formulas.chunked_logprobs_entropy`. Returns float32 (B, T) tensors.
    """
    if entropy not in ENTROPY_MODES:
        raise ValueError(f"entropy must be one of {ENTROPY_MODES}, got {entropy!r}")
    b, t, d = hidden.shape
    outputs = ("log_probs",) if entropy == "skip" else ("log_probs", "entropy")
    logprobs, entropies, *_ = ChunkedLogProbFunction.apply(
        hidden.reshape(b * t, d),
        head.weight,
        head.bias,
        targets.reshape(b * t),
        temperature,
        VOCAB_CHUNK,
        None,
        1.0,
        outputs,
    )
    logprobs = logprobs.view(b, t)
    if entropies is None:
        return logprobs, torch.zeros_like(logprobs)
    entropies = entropies.view(b, t)
    return logprobs, entropies if entropy == "grad" else entropies.detach()
