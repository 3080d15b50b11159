"""Starting settings per algorithm, on top of the per-model and per-device ones.

:mod:`engine.config.pretrained` suggests what a pretrained model trains with on a CPU or a GPU,
measured with GRPO. Each algorithm then adds its own section: the settings below, each with
where its number comes from, which ``export-config`` writes as a comment above the field and
the Train form applies when the algorithm or the model changes. The shipped default model keeps
the config's defaults (they were tuned on it: see :class:`engine.config.algorithms.PPOSettings`
and the PPO trainer's module docstring), so only a pretrained model's suggestion differs.

Why PPO's differ from the defaults on a pretrained model (issue 43: on one H200, SmolLM2 with the
GRPO suggestion and only ``algorithm: ppo`` reached 27% held-out accuracy in 5 minutes against
GRPO's 48%, at 1.19 s a step against 0.62):

- **No KL penalty.** Open-Reasoner-Zero (Hu et al. 2025) and DAPO (Yu et al. 2025, "Removing KL
  Divergence") train reasoning with no KL term: a verifiable reward has no reward model to
  over-optimise, and the penalty holds the policy near an instruct model that never writes the
  tags the reward pays for. Without it there is no reference forward, one of the three forwards
  a PPO step spends besides sampling; the GRPO suggestion has ``beta = 0`` too.
- **A critic warm-up.** The critic's head starts at zero and learns at 1e-3: on the default
  model its mean value rose about 0.035 a step toward a mean return of 0.9 (explained variance
  -0.02 to 0.004 over the first 5 steps, issue 43), so its first advantages are the batch's
  whitened returns and then a young head's noise. Zheng et al. 2023 ("Secrets of RLHF in Large
  Language Models, Part I": pre-training the critic) and VAPO (Yue et al. 2025: value
  pre-training) train the critic alone first.
- **Rewards standardised per step.** The head fits the mean return through hidden features
  that vary from token to token, and that variation is noise in ``R - V``: on the default model
  (same seed, paired steps) explained variance fell to -0.05..-0.11 at steps 7-10 with raw
  rewards and to -0.47..-0.69 with the head at lr 1e-2, and stayed at +0.000..+0.010 with
  ``reward_normalization: batch``, whose returns have mean about 0 (Huang et al. 2024 and Zheng
  et al. 2023 normalise rewards too). The advantages are whitened either way, so the policy's
  step keeps its size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.config.pretrained import local_gpu, pretrained_settings
from engine.config.pretrained import suggested_config as pretrained_config
from engine.config.run_config import ALGORITHMS, RunConfig
from engine.fields import ConfigError
from engine.models.specs import DEFAULT_MODEL_ALIAS


@dataclass(frozen=True)
class Suggested:
    """A suggested value of one config field and where the number comes from."""

    value: Any
    source: str


GRPO_SOURCE = "bench/RESULTS.md, issue 22 (SmolLM2 with GRPO on the built-in task)"

PRETRAINED: dict[str, dict[str, Suggested]] = {
    "grpo": {
        "grpo.beta": Suggested(0.0, f"no reference model; {GRPO_SOURCE}"),
        "grpo.loss_type": Suggested("dapo", f"TRL's default; {GRPO_SOURCE}"),
        "grpo.scale_rewards": Suggested("group", f"TRL's default; {GRPO_SOURCE}"),
    },
    "rloo": {
        # TRL's RLOOConfig has beta 0.05, which loads a reference model (adapters off under
        # LoRA) and adds its forward to every step.
        "rloo.beta": Suggested(
            0.0, "no KL, as the GRPO suggestion (DAPO, Yu et al. 2025); TRL's is 0.05"
        ),
        # The learning rates above were measured with GRPO's advantages divided by the group's
        # std; RLOO's leave-one-out advantages are in reward units (Ahmadian et al. 2024).
        "rloo.normalize_advantages": Suggested(
            True,
            "unit-scale advantages, as GRPO's scale_rewards=group gives the learning rate "
            "measured with it; TRL's default is False",
        ),
    },
    "ppo": {
        "ppo.kl_coef": Suggested(
            0.0,
            "no KL penalty and no reference forward (Open-Reasoner-Zero, Hu et al. 2025; "
            "DAPO, Yu et al. 2025)",
        ),
        "ppo.gamma": Suggested(1.0, "no discount within a completion (Huang et al. 2024; ORZ)"),
        "ppo.lam": Suggested(
            1.0,
            "Monte-Carlo returns for a reward given once at the end (Open-Reasoner-Zero, Hu et "
            "al. 2025; Huang et al. 2024 use 0.95, which passes 1% of it back 90 tokens)",
        ),
        "ppo.whiten_advantages": Suggested(
            True, "per-batch whitening (Huang et al. 2024, 'The N Implementation Details')"
        ),
        "ppo.ppo_epochs": Suggested(
            1, "one update per rollout, as the GRPO suggestion makes (TRL num_iterations 1)"
        ),
        "ppo.num_minibatches": Suggested(1, "one update per rollout, as the GRPO suggestion"),
        "ppo.value_model": Suggested(
            "shared",
            "a head on the policy's last hidden state: a separate critic is a full copy of the "
            "model trained at the critic's learning rate, twice the forward and backward",
        ),
        "ppo.reward_normalization": Suggested(
            "batch",
            "returns of mean ~0, so the critic need not fit the mean through noisy features: "
            "explained variance +0.00..+0.01 against -0.05..-0.11 raw at steps 7-10 on the "
            "default model (issue 43); Huang et al. 2024, Zheng et al. 2023",
        ),
        "ppo.vf_coef": Suggested(0.1, "the default, measured on the default model (PPO trainer)"),
        "ppo.value_learning_rate": Suggested(
            1e-3,
            "the head's own rate: at the policy's it needs thousands of steps to reach the "
            "reward's scale (PPO trainer docstring); LM PPO recipes train the critic faster "
            "(OpenRLHF's examples: critic 9e-6, actor 5e-7)",
        ),
    },
}

# The warm-up is a share of the updates a device fits: about 25 on a CPU in ten minutes, about
# 250 PPO steps on an H200 in five (issue 43).
PPO_WARMUP = {
    False: Suggested(2, "the critic alone for 2 of ~25 CPU updates (Zheng et al. 2023; VAPO)"),
    True: Suggested(10, "the critic alone for 10 of ~250 GPU steps (Zheng et al. 2023; VAPO)"),
}


def algorithm_suggestions(algorithm: str, pretrained: bool, on_gpu: bool) -> dict[str, Suggested]:
    """The suggested values, by dotted field path, of ``algorithm``'s section for a model
    (``pretrained``: any but the shipped tiny ones) on a GPU or CPU, with their sources.

    An unknown algorithm raises ``ConfigError`` on ``algorithm``, naming the allowed ones."""
    if algorithm not in ALGORITHMS:
        raise ConfigError("algorithm", f"must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if not pretrained:
        return {}
    out = dict(PRETRAINED[algorithm])
    if algorithm == "ppo":
        out["ppo.value_warmup_steps"] = PPO_WARMUP[on_gpu]
    return out


def suggested_values(algorithm: str, pretrained: bool, on_gpu: bool) -> dict[str, Any]:
    """Every suggested value by dotted path: the device's pretrained settings (for a pretrained
    model) and ``algorithm``'s own (:func:`algorithm_suggestions`)."""
    values = pretrained_settings(on_gpu) if pretrained else {}
    values.update(
        {p: s.value for p, s in algorithm_suggestions(algorithm, pretrained, on_gpu).items()}
    )
    return values


def suggestion_sources(algorithm: str, pretrained: bool, on_gpu: bool) -> dict[str, str]:
    """Where each suggested number comes from, by dotted path (the comments of the YAML)."""
    device = "a GPU" if on_gpu else "the CPU"
    sources = {
        path: f"suggested for a pretrained model on {device}: engine/config/pretrained.py, "
        f"{GRPO_SOURCE}"
        for path in (pretrained_settings(on_gpu) if pretrained else {})
    }
    sources.update(
        {p: s.source for p, s in algorithm_suggestions(algorithm, pretrained, on_gpu).items()}
    )
    return sources


def suggested_config(
    model: str = DEFAULT_MODEL_ALIAS, on_gpu: bool | None = None, algorithm: str = "grpo"
) -> RunConfig:
    """:func:`engine.config.pretrained.suggested_config` for ``algorithm``, with its section's
    suggestions (:func:`algorithm_suggestions`) for a pretrained model on the device."""
    gpu = local_gpu() if on_gpu is None else on_gpu
    data = pretrained_config(model, gpu).to_dict()
    data["algorithm"] = algorithm
    for path, value in suggested_values(algorithm, model != DEFAULT_MODEL_ALIAS, gpu).items():
        section, name = path.split(".")
        data[section][name] = value
    return RunConfig.from_dict(data)
