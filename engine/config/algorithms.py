"""The settings of each training algorithm: GRPO and RLOO as TRL implements them, our PPO."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from engine.fields import (
    POSITIVE,
    ConfigError,
    check_fields,
    knob,
)

GRPO_LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")


SCALE_REWARDS = ("group", "batch", "none")


# How the world-model loss averages its cross-entropy (engine/trainers/world_model.py).
WORLD_LOSS_NORMALIZATIONS = ("selected_tokens", "sequence_mean", "seq_mean_token_sum_norm")


PPO_KL_MODES = ("fixed", "adaptive")


PPO_REWARD_NORMALIZATION = ("none", "batch", "running", "group")


PPO_VALUE_MODELS = ("shared", "separate")


@dataclass
class ClippedPolicySettings:
    """The knobs TRL's GRPOTrainer and RLOOTrainer share, under the same names: the KL penalty,
    the clipped importance ratio (PPO's surrogate, Schulman et al. 2017) and the passes over
    each generated batch."""

    beta: float = knob(
        0.0, help="KL penalty to the reference model; 0 loads no reference.", lo=0, hi=10
    )
    epsilon: float = knob(0.2, help="Lower clipping range of the ratio.", lo=0, hi=1, lo_open=True)
    epsilon_high: float | None = knob(
        None,
        help="Upper clipping range (DAPO uses 0.28); empty = epsilon.",
        lo_field="epsilon",
        hi=1,
    )
    num_iterations: int = knob(
        1, help="Optimisation passes over each generated batch (mu).", lo=1, hi=16
    )
    mask_truncated_completions: bool = knob(
        False, help="Leave length-capped completions out of the loss."
    )

    def trl_args(self) -> dict[str, Any]:
        """Every field, by TRL's name (each field here is named as TRL names it)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class GRPOSettings(ClippedPolicySettings):
    """Group Relative Policy Optimization (Shao et al. 2024) as implemented by TRL's GRPOTrainer."""

    loss_type: str = knob(
        "dapo",
        help=f"Loss normalisation: {', '.join(GRPO_LOSS_TYPES)} (TRL's names).",
        choices=GRPO_LOSS_TYPES,
    )
    scale_rewards: str = knob(
        "group",
        help="Divide advantages by the std of: group, batch or none.",
        choices=SCALE_REWARDS,
    )
    world_model_coeff: float = knob(
        0.0,
        help=(
            "Weight of the world-model loss: cross-entropy on the tool-result tokens the GRPO "
            "loss masks (needs tools); 0 = plain GRPO."
        ),
        lo=0,
        hi=10,
    )
    world_loss_normalization: str = knob(
        "selected_tokens",
        help=(
            "Averaging of the world-model loss: selected_tokens (mean over tool-result tokens), "
            "sequence_mean (per rollout, then over rollouts) or seq_mean_token_sum_norm (sum "
            "per rollout / max_completion_length)."
        ),
        choices=WORLD_LOSS_NORMALIZATIONS,
    )

    def __post_init__(self) -> None:
        check_fields(self, "grpo")

    def trl_args(self) -> dict[str, Any]:
        """TRL's fields only: the world-model loss is ours (engine/trainers/world_model.py)."""
        args = super().trl_args()
        del args["world_model_coeff"], args["world_loss_normalization"]
        return args


@dataclass
class RLOOSettings(ClippedPolicySettings):
    """REINFORCE Leave-One-Out (Ahmadian et al. 2024) as implemented by TRL's RLOOTrainer."""

    normalize_advantages: bool = knob(
        False, help="Whiten the leave-one-out advantages over the batch."
    )

    def __post_init__(self) -> None:
        check_fields(self, "rloo")


@dataclass
class PPOSettings:
    """PPO for language models (Schulman et al. 2017; the RLHF recipe of Ziegler et al. 2019).

    One step samples a rollout, scores it, adds a per-token KL penalty to a frozen reference,
    estimates advantages with GAE and runs ``ppo_epochs`` passes of ``num_minibatches``
    clipped updates of the policy and its value function.
    """

    gamma: float = knob(1.0, help="Discount over completion tokens.", lo=0, hi=1)
    lam: float = knob(
        1.0, help="GAE lambda: 1 credits every token with the final reward.", lo=0, hi=1
    )
    kl_coef: float = knob(
        0.05,
        help="KL penalty beta per token to the reference model (start value if adaptive).",
        lo=0,
        hi=10,
    )
    kl_mode: str = knob(
        "fixed",
        help=f"KL coefficient: {', '.join(PPO_KL_MODES)} (adaptive targets target_kl).",
        choices=PPO_KL_MODES,
    )
    target_kl: float = knob(
        6.0,
        help="Adaptive mode: KL to the reference per completion to aim for.",
        **POSITIVE,
    )
    kl_horizon: int = knob(
        10000, help="Adaptive mode: completions over which beta adapts.", lo=1, hi=1e9
    )
    clip_range: float = knob(0.2, help="Policy ratio clipping epsilon.", lo=0, hi=1, lo_open=True)
    clip_range_value: float | None = knob(
        0.2,
        help="Value clipping around the rollout values; empty = no clip.",
        **POSITIVE,
    )
    vf_coef: float = knob(0.1, help="Weight of the value loss.", lo=0, hi=100)
    entropy_coef: float = knob(0.0, help="Weight of the entropy bonus.", lo=0, hi=10)
    ppo_epochs: int = knob(1, help="Optimisation passes over each rollout.", lo=1, hi=16)
    num_minibatches: int = knob(
        1, help="Minibatches per pass (one optimizer update each).", lo=1, hi=4096
    )
    whiten_advantages: bool = knob(
        True, help="Normalise advantages to mean 0, std 1 over the rollout."
    )
    reward_clip: float | None = knob(
        None,
        help="Clip sequence rewards to [-bound, bound]; empty = no clip.",
        **POSITIVE,
    )
    reward_normalization: str = knob(
        "none",
        help=(
            f"Standardise sequence rewards: {', '.join(PPO_REWARD_NORMALIZATION)} "
            "(running = mean/std over all steps so far; group = among each prompt's "
            "completions, GRPO's baseline)."
        ),
        choices=PPO_REWARD_NORMALIZATION,
    )
    max_approx_kl: float | None = knob(
        None,
        help="Stop a step's update passes once approx KL exceeds this; empty = never.",
        **POSITIVE,
    )
    value_model: str = knob(
        "shared",
        help=(
            "Critic: shared (value head on the policy's last hidden state) or separate "
            "(a copy of the base model with its own head)."
        ),
        choices=PPO_VALUE_MODELS,
    )
    value_learning_rate: float | None = knob(
        1e-3,
        help="Learning rate of the critic's own weights; empty = the policy's.",
        lo=0,
        hi=1,
        lo_open=True,
    )

    value_warmup_steps: int = knob(
        0,
        help=(
            "Steps at the start that train only the critic (the policy's learning rate is 0), "
            "so its first advantages are not the untrained critic's noise."
        ),
        lo=0,
        hi=1_000_000,
    )

    def __post_init__(self) -> None:
        check_fields(self, "ppo")
        if self.kl_mode == "adaptive" and self.kl_coef == 0:
            raise ConfigError("ppo.kl_coef", "must be > 0 in adaptive mode (it scales from there)")

    def check_batch(self, completions_per_device: int) -> None:
        """Each minibatch needs at least one completion on every device."""
        if self.num_minibatches > completions_per_device:
            raise ConfigError(
                "ppo.num_minibatches",
                f"each device holds {completions_per_device} completions per step, too few for "
                f"{self.num_minibatches} minibatches; use at most {completions_per_device}",
            )
