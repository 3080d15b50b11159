"""What PPO carries from step to step besides the weights: the KL coefficient, fixed or adapted
toward a target (Ziegler et al. 2019), and running reward statistics for normalisation."""

from __future__ import annotations

import math

import torch


class FixedKLController:
    """A constant KL coefficient beta."""

    def __init__(self, kl_coef: float) -> None:
        self.value = kl_coef

    def update(self, current_kl: float, n_steps: int) -> None:
        pass


class AdaptiveKLController:
    """Adaptive KL coefficient (Ziegler et al. 2019 §2.2, ``lm-human-preferences``).

    ``e = clip(KL / target - 1, -0.2, 0.2)`` and ``beta <- beta * (1 + e * n_steps / horizon)``,
    where KL is the per-sequence KL to the reference and ``n_steps`` the sequences just seen.
    """

    def __init__(self, init_kl_coef: float, target: float, horizon: int) -> None:
        self.value = init_kl_coef
        self.target = target
        self.horizon = horizon

    def update(self, current_kl: float, n_steps: int) -> None:
        proportional_error = min(max(current_kl / self.target - 1.0, -0.2), 0.2)
        self.value *= 1.0 + proportional_error * n_steps / self.horizon


class RunningMoments:
    """Running mean and standard deviation of a stream of batches (Chan et al. parallel update).

    Used to normalise sequence rewards by their running statistics ("N implementation details
    of RLHF with PPO", reward normalisation).
    """

    def __init__(self, mean: float = 0.0, var: float = 1.0, count: float = 0.0) -> None:
        self.mean, self.var, self.count = mean, var, count

    @property
    def std(self) -> float:
        return math.sqrt(self.var)

    def update(self, xs: torch.Tensor) -> None:
        """Fold in a batch of values."""
        n = xs.numel()
        if n == 0:
            return
        batch_mean = xs.double().mean().item()
        batch_var = xs.double().var(unbiased=False).item()
        total = self.count + n
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean += delta * n / total
        self.var = m2 / total
        self.count = total

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "var": self.var, "count": self.count}
