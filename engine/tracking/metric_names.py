"""The namespaced metric names Reward Studio stores, defined once.

TRL logs flat keys (``reward``, ``loss``, ``rewards/format/mean``); storage, charts and the CLI
use the namespaced names below. :func:`from_trl` is the only place that maps one to the other.
"""

from __future__ import annotations

REWARD_TOTAL = "reward/total"
REWARD_TOTAL_STD = "reward/total_std"
REWARD_ZERO_STD_FRACTION = "reward/zero_std_fraction"
LOSS_POLICY = "loss/policy"
LOSS_VALUE = "loss/value"
# One name per quantity whichever trainer logs it, so Compare overlays GRPO, RLOO and PPO runs.
POLICY_ENTROPY = "policy/entropy"  # mean entropy per completion token, nats
POLICY_KL = "policy/kl"  # mean KL to the reference per completion token (TRL's "kl")
POLICY_CLIP_RATIO = "policy/clip_ratio/region_mean"  # share of tokens whose ratio was clipped
COMPLETION_MEAN_LENGTH = "completions/mean_length"
COMPLETION_MAX_LENGTH = "completions/max_length"  # the step's longest completion, tokens
COMPLETION_CLIPPED_RATIO = "completions/clipped_ratio"
GRAD_NORM = "train/grad_norm"
# Updates dropped because their gradients were NaN or infinite (engine/trainers/finite_updates.py).
SKIPPED_UPDATES = "train/skipped_updates"
LEARNING_RATE = "train/learning_rate"
EPOCH = "train/epoch"
STEP_TIME = "perf/step_time_s"
TOKENS_PER_S = "perf/tokens_per_s"
NUM_TOKENS = "perf/num_tokens"
GENERATION_TIME = "perf/generation_s"  # seconds of the step spent sampling completions
REWARD_TIME = "perf/reward_s"  # seconds of the step spent scoring them (the reward functions)
PEAK_MEMORY = "perf/peak_memory_gib"  # the most GPU memory torch held so far in the run
# What the run started with on a GPU (step 0): the estimated peak and the micro-batch it assumed.
ESTIMATED_PEAK = "perf/estimated_peak_gib"
MICRO_BATCH = "perf/micro_batch"
# Tokens a row of the step's update runs: prompt plus completion, padded as the update pads.
UPDATE_WIDTH = "perf/update_width"
# Mean |log p_sampler - log p_trainer| over sampled tokens, nats/token: a drifting sampler shows.
GEN_LOGPROB_GAP = "gen/logprob_gap"
# training.rollout async (engine/trainers/trl/rollout_ahead.py): updates between the weights that
# sampled a step's completions and those it trains (0 or 1), the share of the sampling time the
# step did not wait for, and the truncated importance ratios' token mean and clipped share.
STALENESS = "perf/staleness_steps"
OVERLAP_SHARE = "perf/overlap_share"
GEN_IS_RATIO_MEAN = "gen/is_ratio_mean"
GEN_IS_CLIPPED_SHARE = "gen/is_clipped_share"
# Agent runs: cross-entropy on the tool-result tokens (engine/trainers/world_model.py), nats/token.
WORLD_MODEL_LOSS = "train/world_model_loss"
EVAL_ACCURACY = "eval/accuracy"
EVAL_STRICT_ACCURACY = "eval/strict_accuracy"
EVAL_FORMAT_RATE = "eval/format_rate"
# How many held-out completions the accuracy is a share of: the n of its interval (ui/plots/
# intervals.py); 50 prompts move the accuracy +-6 points by chance alone.
EVAL_SCORED = "eval/n_scored"
# Held-out evaluation through the tool loop (engine/tracking/tool_evaluation.py): shares of
# rollouts with a parsed call, with a call whose result is the gold answer, with a malformed call.
EVAL_TOOL_CALL_RATE = "eval/tool_call_rate"
EVAL_USEFUL_CALL_RATE = "eval/useful_call_rate"
EVAL_MALFORMED_CALL_RATE = "eval/malformed_call_rate"
EVAL_REWARD_TOTAL = "eval/reward_total"  # the run's reward on held-out samples (mean total)
# PPO (our trainer): Schulman et al. 2017 diagnostics and the RLHF KL penalty.
REWARD_UNSCORED_FRACTION = "reward/unscored_fraction"
PPO_APPROX_KL = "ppo/approx_kl"
PPO_VALUE_CLIP_FRACTION = "ppo/value_clip_fraction"
PPO_EXPLAINED_VARIANCE = "ppo/explained_variance"
PPO_KL_TO_REF = "ppo/kl_to_ref"  # summed over a completion's tokens: what the KL controller steers
PPO_KL_COEF = "ppo/kl_coef"
PPO_VALUE_MEAN = "ppo/value_mean"
PPO_RETURN_MEAN = "ppo/return_mean"
PPO_EPOCHS = "ppo/epochs"
# Distributions over a step's whole generation batch, one value per completion
# (engine/tracking/distributions.py, storage/records/distributions.py): the total reward, the
# advantage, the length in tokens, and the length of right and of wrong answers apart.
DIST_REWARD = "dist/reward"
DIST_ADVANTAGE = "dist/advantage"
DIST_LENGTH = "dist/length"
DIST_LENGTH_CORRECT = "dist/length/correct"
DIST_LENGTH_WRONG = "dist/length/wrong"

_TRL_RENAMES = {
    "reward": REWARD_TOTAL,
    "reward_std": REWARD_TOTAL_STD,
    "frac_reward_zero_std": REWARD_ZERO_STD_FRACTION,
    "loss": LOSS_POLICY,
    "entropy": POLICY_ENTROPY,
    "kl": POLICY_KL,
    "grad_norm": GRAD_NORM,
    "learning_rate": LEARNING_RATE,
    "epoch": EPOCH,
    "step_time": STEP_TIME,
    "num_tokens": NUM_TOKENS,
}
# The Trainer's end-of-training log carries this key; it is a summary, not a point of a series.
_TRL_SUMMARY_KEY = "train_runtime"


def component_metric(component: str) -> str:
    """The series of one reward component's raw (unweighted) mean score."""
    return f"rewards/{component}"


def eval_component_metric(component: str) -> str:
    """The series of one reward component's raw mean score on held-out samples."""
    return f"eval/rewards/{component}"


def is_run_summary(logs: dict) -> bool:
    """True for the Trainer's end-of-training log, which is not a point of any series."""
    return _TRL_SUMMARY_KEY in logs


def from_trl(key: str) -> str:
    """Our namespaced name for a key TRL logs."""
    if key in _TRL_RENAMES:
        return _TRL_RENAMES[key]
    if key.startswith("rewards/") and key.endswith("/mean"):
        return key.removesuffix("/mean")
    if key.startswith("clip_ratio/"):
        return f"policy/{key}"
    if "/" in key:
        return key
    return f"train/{key}"


def weight_metric(component: str) -> str:
    """The weight in force of a reward component at a step (weight schedules)."""
    return f"reward/weight/{component}"
