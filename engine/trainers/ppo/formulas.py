"""The math of PPO for language models, as small pure functions over padded token tensors.

Every tensor is ``(B, T)``: B sequences (one completion each), T completion positions, with a
``mask`` that is 1 on generated tokens and 0 on padding. Padding never contributes: it is
skipped by GAE and left out of every mean.

Sources:

- PPO's clipped surrogate objective and the approximate KL: Schulman et al. 2017, "Proximal
  Policy Optimization Algorithms", eq. 7; the estimator ``(ratio - 1) - log ratio`` is
  Schulman's "Approximating KL divergence" (2020), ``k3``, as used by cleanrl ``ppo.py``.
- Generalized advantage estimation: Schulman et al. 2016, "High-Dimensional Continuous Control
  Using Generalized Advantage Estimation", eq. 16, with cleanrl's ``nextnonterminal`` loop.
- Per-token KL penalty with the sequence reward on the last token, the clipped value loss,
  advantage whitening and the adaptive KL controller: Ziegler et al. 2019, "Fine-Tuning Language
  Models from Human Preferences" §2.2 and its ``lm-human-preferences`` code; Ouyang et al. 2022
  (InstructGPT) eq. 2; Huang et al. 2024, "The N Implementation Details of RLHF with PPO".
"""

from __future__ import annotations

import math

import torch
import torch.utils.checkpoint


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``x`` over the positions where ``mask`` is 1 (0 when there are none).

    Padded positions are selected away, not multiplied by 0, so even an inf or NaN there
    cannot reach the mean or its gradient.
    """
    kept = torch.where(mask.bool(), x, torch.zeros((), dtype=x.dtype, device=x.device))
    count = mask.to(x.dtype)
    if dim is None:
        return kept.sum() / count.sum().clamp(min=1.0)
    return kept.sum(dim) / count.sum(dim).clamp(min=1.0)


def masked_var(x: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance of ``x`` over masked positions (Bessel-corrected unless ``unbiased=False``)."""
    mean = masked_mean(x, mask)
    n = mask.to(x.dtype).sum()
    var = masked_mean((x - mean) ** 2, mask)
    if unbiased and n > 1:
        var = var * n / (n - 1)
    return var


def masked_whiten(
    x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, eps: float = 1e-8
) -> torch.Tensor:
    """``(x - mean) / std`` over masked positions; padding comes back as 0.

    With ``shift_mean=False`` only the scale changes (used for rewards, whose sign matters).
    """
    mean, var = masked_mean(x, mask), masked_var(x, mask)
    whitened = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        whitened = whitened + mean
    return whitened * mask.to(x.dtype)


def group_standardize(scores: torch.Tensor, group_size: int, eps: float = 1e-8) -> torch.Tensor:
    """Each group of ``group_size`` consecutive scores standardised among themselves, (N,) ->
    (N,): ``(r - mean(group)) / std(group)``, GRPO's outcome-supervised advantage (Shao et al.
    2024, "DeepSeekMath", §4.1.2), with the population std; a group whose scores are all equal
    comes back as 0."""
    if scores.numel() % group_size:
        raise ValueError(f"{scores.numel()} scores do not split into groups of {group_size}")
    groups = scores.reshape(-1, group_size)  # (G, group_size)
    mean = groups.mean(dim=1, keepdim=True)
    std = groups.std(dim=1, unbiased=False, keepdim=True)
    return ((groups - mean) / std.clamp(min=eps)).reshape(-1)


def last_token_index(mask: torch.Tensor) -> torch.Tensor:
    """Index of the last 1 in each row of ``mask`` (B, T) -> (B,); 0 for an all-zero row."""
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    return torch.where(mask.bool(), positions, torch.zeros_like(positions)).amax(dim=1)


def token_rewards(
    scores: torch.Tensor,
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token rewards ``r_t = -beta * (logp_t - logp_ref_t)``, plus the score on the last token.

    Ziegler et al. 2019 §2.2: ``R(x, y) = r(x, y) - beta * log(pi(y|x) / rho(y|x))``, spread
    over tokens with the sequence reward ``r(x, y)`` placed on the last generated token.

    Args:
        scores: sequence rewards, (B,).
        logprobs, ref_logprobs: log-probabilities of the sampled tokens under the rollout
            policy and the reference policy, (B, T).
        mask: 1 on generated tokens, (B, T).
        kl_coef: beta.

    Returns:
        ``(rewards, kl)``, both (B, T) and 0 on padding; ``kl`` is ``logp - logp_ref``.
    """
    maskf = mask.to(logprobs.dtype)
    kl = (logprobs - ref_logprobs) * maskf  # (B, T)
    rewards = -kl_coef * kl  # (B, T)
    last = last_token_index(mask)  # (B,)
    has_tokens = mask.sum(dim=1) > 0  # (B,)
    rows = torch.arange(rewards.shape[0], device=rewards.device)
    rewards[rows, last] += torch.where(has_tokens, scores.to(rewards.dtype), 0.0)
    return rewards, kl


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float,
    dones: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimates and returns over tokens (Schulman et al. 2016, eq. 16).

    ``delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t)`` and
    ``A_t = delta_t + gamma * lam * (1 - done_t) * A_{t+1}``, computed backwards. Padding is
    transparent: a padded position is skipped, so the next *real* token supplies
    ``V(s_{t+1})`` and ``A_{t+1}``. ``done_t = 1`` ends an episode after token t (nothing is
    bootstrapped across it); when ``dones`` is None each row is one episode that ends at its
    last real token, as for a completion (after it comes nothing, so ``V = 0``).

    Args:
        rewards, values: (B, T).
        mask: 1 on real tokens, (B, T).
        gamma: discount; lam: GAE lambda.
        dones: optional (B, T) episode ends.

    Returns:
        ``(advantages, returns)``, (B, T), 0 on padding; ``returns = advantages + values``.
    """
    B, T = rewards.shape
    maskb = mask.bool()
    if dones is None:
        dones = torch.zeros_like(maskb)
    donesf = dones.to(rewards.dtype)
    advantages = torch.zeros_like(rewards)  # (B, T)
    lastgaelam = torch.zeros(B, dtype=rewards.dtype, device=rewards.device)  # (B,)
    nextvalues = torch.zeros(B, dtype=rewards.dtype, device=rewards.device)  # (B,)
    for t in reversed(range(T)):
        nextnonterminal = 1.0 - donesf[:, t]
        delta = rewards[:, t] + gamma * nextvalues * nextnonterminal - values[:, t]
        advantage_t = delta + gamma * lam * nextnonterminal * lastgaelam
        advantages[:, t] = torch.where(maskb[:, t], advantage_t, 0.0)
        lastgaelam = torch.where(maskb[:, t], advantage_t, lastgaelam)
        nextvalues = torch.where(maskb[:, t], values[:, t], nextvalues)
    returns = (advantages + values) * mask.to(values.dtype)
    return advantages, returns


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_range: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate loss (Schulman et al. 2017, eq. 7), a token-level mean.

    ``L = mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))``.

    Returns:
        ``(loss, clipfrac, approx_kl)``: the loss, the share of tokens whose ratio was clipped,
        and the approximate KL between the old and new policy (both without gradient).
    """
    # Padding gets ratio 1 so no overflow there can leak into the gradient.
    logratio = torch.where(mask.bool(), logprobs - old_logprobs, 0.0)  # (B, T)
    ratio = torch.exp(logratio)  # (B, T)
    pg_losses = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    loss = masked_mean(torch.max(pg_losses, pg_losses2), mask)
    with torch.no_grad():
        clipfrac = clip_fraction(ratio, mask, clip_range)
        kl = approx_kl(logratio, mask)
    return loss, clipfrac, kl


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range_value: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Clipped value loss, ``0.5 * mean(max((V - R)^2, (V_clip - R)^2))``.

    ``V_clip = V_old + clip(V - V_old, -eps_v, eps_v)`` (cleanrl ``ppo.py``; the
    lm-human-preferences ``cliprange_value``). ``clip_range_value=None`` gives the plain
    squared error.

    Returns:
        ``(loss, vf_clipfrac)``: the loss and the share of tokens where the clipped error won.
    """
    maskb = mask.bool()
    returns = torch.where(maskb, returns, values.detach())  # padding: no error, no overflow
    old_values = torch.where(maskb, old_values, values.detach())
    vf_losses1 = (values - returns) ** 2  # (B, T)
    if clip_range_value is None:
        return 0.5 * masked_mean(vf_losses1, mask), torch.zeros((), device=values.device)
    values_clipped = old_values + torch.clamp(
        values - old_values, -clip_range_value, clip_range_value
    )
    vf_losses2 = (values_clipped - returns) ** 2  # (B, T)
    loss = 0.5 * masked_mean(torch.max(vf_losses1, vf_losses2), mask)
    with torch.no_grad():
        vf_clipfrac = masked_mean((vf_losses2 > vf_losses1).to(values.dtype), mask)
    return loss, vf_clipfrac


def ppo_loss(
    logprobs: torch.Tensor,
    values: torch.Tensor,
    entropy: torch.Tensor,
    old_logprobs: torch.Tensor,
    old_values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_range: float,
    clip_range_value: float | None,
    vf_coef: float,
    entropy_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``L = L_clip + vf_coef * L_value - entropy_coef * H`` (Schulman et al. 2017, eq. 9).

    All inputs are (B, T); padding (``mask == 0``) is left out of every term.
    """
    pg_loss, clipfrac, approx_kl = policy_loss(logprobs, old_logprobs, advantages, mask, clip_range)
    vf_loss, vf_clipfrac = value_loss(values, old_values, returns, mask, clip_range_value)
    entropy_mean = masked_mean(entropy, mask)
    loss = pg_loss + vf_coef * vf_loss - entropy_coef * entropy_mean
    stats = {
        "policy_loss": pg_loss.detach(),
        "value_loss": vf_loss.detach(),
        "entropy": entropy_mean.detach(),
        "approx_kl": approx_kl,
        "clipfrac": clipfrac,
        "vf_clipfrac": vf_clipfrac,
    }
    return loss, stats


def approx_kl(logratio: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``mean((ratio - 1) - log ratio)`` over real tokens: an unbiased, non-negative KL estimate."""
    return masked_mean(torch.expm1(logratio) - logratio, mask)


def clip_fraction(ratio: torch.Tensor, mask: torch.Tensor, clip_range: float) -> torch.Tensor:
    """Share of real tokens whose probability ratio left ``[1 - eps, 1 + eps]``."""
    return masked_mean(((ratio - 1.0).abs() > clip_range).to(ratio.dtype), mask)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the categorical distribution at each position: (B, T, V) -> (B, T)."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Log-probability of ``tokens`` (B, T) under ``logits`` (B, T, V) -> (B, T)."""
    logp = torch.log_softmax(logits, dim=-1)
    return torch.gather(logp, 2, tokens.unsqueeze(-1)).squeeze(-1)


# Float32 elements of one chunk's (rows, V) logits: 2^26 is 256 MiB, about 440 positions of a
# 151,936-token vocabulary.
CHUNK_ELEMENTS = 1 << 26


ENTROPY_MODES = ("grad", "detached", "skip")


def _chunk_logprobs_entropy(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float, entropy: str
) -> tuple[torch.Tensor, torch.Tensor]:
    x = logits.float() / temperature  # (b, T, V), one chunk only
    lse = torch.logsumexp(x, dim=-1)  # (b, T)
    logp = torch.gather(x, 2, tokens.unsqueeze(-1)).squeeze(-1) - lse
    if entropy == "skip":
        return logp, torch.zeros_like(logp)
    # H = -sum p log p = lse - sum p x, with p = softmax(x)
    with torch.set_grad_enabled(entropy == "grad" and torch.is_grad_enabled()):
        h = lse - (torch.softmax(x, dim=-1) * x).sum(dim=-1)
    return logp, h


def chunked_logprobs_entropy(
    logits: torch.Tensor,
    tokens: torch.Tensor,
    temperature: float = 1.0,
    chunk_elements: int | None = None,
    entropy: str = "grad",
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`logprobs_from_logits` and :func:`entropy_from_logits` of ``logits / temperature``
    without a float32 copy of the whole (B, T, V) tensor.

    Selective log-softmax: ``logp(y) = x_y - logsumexp(x)``, over chunks of rows upcast one at
    a time (as TRL's ``selective_log_softmax`` and Liger's fused linear cross-entropy do).
    Under autograd each chunk is recomputed in the backward pass (activation checkpointing), so
    the float32 intermediates of only one chunk are ever alive.

    ``entropy``: ``grad`` (for an entropy bonus), ``detached`` (for a metric only: no backward
    through the softmax) or ``skip`` (zeros).

    Returns:
        ``(logprobs, entropy)``, each (B, T), float32.
    """
    if entropy not in ENTROPY_MODES:
        raise ValueError(f"entropy must be one of {ENTROPY_MODES}, got {entropy!r}")
    chunk_elements = chunk_elements or CHUNK_ELEMENTS
    _, T, V = logits.shape
    rows = max(1, chunk_elements // max(1, T * V))  # batch rows per chunk
    cols = T if rows > 1 else max(1, chunk_elements // V)  # positions per chunk
    checkpointed = torch.is_grad_enabled() and logits.requires_grad
    logps, entropies = [], []
    for row_chunk, row_tokens in zip(logits.split(rows), tokens.split(rows), strict=True):
        parts = []
        for chunk, chunk_tokens in zip(
            row_chunk.split(cols, dim=1), row_tokens.split(cols, dim=1), strict=True
        ):
            if checkpointed:
                parts.append(
                    torch.utils.checkpoint.checkpoint(
                        _chunk_logprobs_entropy,
                        chunk,
                        chunk_tokens,
                        temperature,
                        entropy,
                        use_reentrant=False,
                    )
                )
            else:
                parts.append(_chunk_logprobs_entropy(chunk, chunk_tokens, temperature, entropy))
        logps.append(torch.cat([lp for lp, _ in parts], dim=1))
        entropies.append(torch.cat([ent for _, ent in parts], dim=1))
    return torch.cat(logps), torch.cat(entropies)


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """``1 - Var(R - V) / Var(R)`` over real tokens (cleanrl ``ppo.py``); NaN when Var(R) = 0."""
    var_returns = masked_var(returns, mask, unbiased=False)
    if var_returns.item() == 0.0:
        return math.nan
    return (1.0 - masked_var(returns - values, mask, unbiased=False) / var_returns).item()
