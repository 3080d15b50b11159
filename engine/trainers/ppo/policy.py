"""The policy-and-critic PPO optimises, as the rollout, the update and the loop all read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from accelerate import Accelerator

from engine.trainers.ppo.value_head import PolicyWithValue


@dataclass
class PolicyParts:
    """The prepared :class:`PolicyWithValue` (DDP-wrapped on several GPUs), its accelerator
    and the frozen reference policy (``None``: none, or the adapters switched off under LoRA)."""

    accelerator: Accelerator
    model: Any
    ref_policy: Any | None
    uses_reference: bool
    fsdp: bool

    @property
    def unwrapped(self) -> PolicyWithValue:
        return self.accelerator.unwrap_model(self.model)

    @property
    def policy(self) -> Any:
        return self.unwrapped.policy

    def agree(self, flag: bool) -> bool:
        """True on every process when ``flag`` is true on any (stops must happen together)."""
        if self.accelerator.num_processes == 1:
            return flag
        value = torch.tensor([1.0 if flag else 0.0], device=self.accelerator.device)
        return bool(self.accelerator.reduce(value, "sum").item() > 0)

    def mean_across(self, value: float) -> float:
        """The mean of ``value`` over all processes."""
        if self.accelerator.num_processes == 1:
            return value
        tensor = torch.tensor([value], device=self.accelerator.device, dtype=torch.float64)
        return float(self.accelerator.reduce(tensor, "mean").item())
