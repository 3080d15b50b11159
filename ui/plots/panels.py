"""The panels of the Runs view: which metrics each chart draws, by exact name or prefix, and
the note under it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.tracking import metric_names as m

PALETTE = (
    "#2563eb",
    "#dc2626",
    "#16a34a",
    "#9333ea",
    "#ea580c",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4b5563",
    "#65a30d",
)


@dataclass(frozen=True)
class Panel:
    """One chart: a title, the metrics it draws, and a plain-language note under it."""

    key: str
    title: str
    names: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    y_title: str = ""
    note: str = ""
    exclude_suffixes: tuple[str, ...] = ()
    only_for: tuple[str, ...] = ()  # algorithms that log it; empty: every algorithm
    note_for: tuple[str, ...] = ()  # algorithms the note is about; empty: every algorithm
    # Metrics drawn against a second y axis on the right: exact names, or prefixes ending "/".
    right_axis: tuple[str, ...] = ()

    def on_right(self, name: str) -> bool:
        return any(name == r or (r.endswith("/") and name.startswith(r)) for r in self.right_axis)

    def note_shown_for(self, algorithm: str | None) -> bool:
        return bool(self.note) and (not self.note_for or algorithm in self.note_for)

    def matches(self, name: str) -> bool:
        if name in self.names:
            return True
        if any(name.endswith(suffix) for suffix in self.exclude_suffixes):
            return False
        return any(name.startswith(prefix) for prefix in self.prefixes)

    def select(self, names: Iterable[str]) -> list[str]:
        """The metric names this panel draws, exact names first, in a stable order."""
        names = list(names)
        exact = [n for n in self.names if n in names]
        rest = sorted(n for n in names if n not in self.names and self.matches(n))
        return exact + rest


PANELS: tuple[Panel, ...] = (
    Panel(
        "reward",
        "Reward: total and each component (raw mean)",
        names=(m.REWARD_TOTAL,),
        prefixes=("rewards/",),
        exclude_suffixes=("/std",),  # the spread within groups is not a reward level
        y_title="reward",
    ),
    Panel(
        "weights",
        "Reward weights in force (weight schedules)",
        prefixes=("reward/weight/",),
        y_title="weight",
    ),
    Panel(
        "loss",
        "Loss",
        names=(m.LOSS_POLICY, m.LOSS_VALUE, m.WORLD_MODEL_LOSS),
        y_title="loss",
        note="A policy loss near 0 is normal in GRPO/RLOO: advantages are centred within each "
        "group, so the loss averages out. Watch the reward, not the loss.",
        note_for=("grpo", "rloo"),
        # PPO's value loss is often 100x its policy loss, and the world-model loss (nats per
        # tool-result token) is a cross-entropy: one axis would draw the policy loss flat.
        right_axis=(m.LOSS_VALUE, m.WORLD_MODEL_LOSS),
    ),
    Panel(
        "tools",
        "Tool calls (agent runs)",
        prefixes=("tools/",),  # TRL's tools/call_frequency and tools/failure_frequency
        y_title="calls per rollout / failed share",
    ),
    Panel("grad_norm", "Gradient norm", names=(m.GRAD_NORM,), y_title="L2 norm"),
    Panel("learning_rate", "Learning rate", names=(m.LEARNING_RATE,), y_title="learning rate"),
    Panel(
        "kl",
        "KL to the reference policy",
        names=(m.POLICY_KL, m.PPO_APPROX_KL, m.PPO_KL_TO_REF),
        right_axis=(m.PPO_KL_TO_REF,),  # per completion: tens of times the per-token KL
        y_title="KL",
        note="Logged only with a KL penalty (beta > 0). At beta = 0 no reference model is "
        "loaded, and every log-probability a step has (the sampler's, the update's) is of the "
        "current policy: the drift from the start policy cannot be read from them without a "
        "second forward pass through the start weights, which is what beta > 0 pays for "
        "(a small beta such as 0.001 shows the drift and barely pulls). "
        "PPO's approx KL is each update's step from the rollout's policy: 0.001-0.02 is a "
        "healthy step (cleanrl stops at 0.015), above 0.05 a jump (lower the learning rate or "
        "set ppo.max_approx_kl).",
    ),
    Panel(
        "entropy",
        "Policy entropy",
        names=(m.POLICY_ENTROPY,),
        y_title="nats per token",
    ),
    Panel(
        "clip",
        "Clip ratios",
        names=(m.POLICY_CLIP_RATIO, m.PPO_VALUE_CLIP_FRACTION),
        prefixes=("policy/clip_ratio",),
        y_title="share of tokens",
        note="At 0 by construction with one update per rollout (num_iterations 1, the "
        "suggestion): the policy that sampled is the one updated, every probability ratio is "
        "exactly 1 and nothing is clipped. The ratios move with num_iterations > 1, where "
        "each later update steps away from the sampling policy.",
        note_for=("grpo", "rloo"),
    ),
    Panel(
        "length",
        "Completion length",
        names=(
            m.COMPLETION_MEAN_LENGTH,
            "completions/mean_terminated_length",
            m.COMPLETION_MAX_LENGTH,
        ),
        y_title="tokens",
    ),
    Panel(
        "signal",
        "Truncated completions and zero-std groups",
        names=(m.COMPLETION_CLIPPED_RATIO, m.REWARD_ZERO_STD_FRACTION),
        y_title="share",
        note="Truncated completions usually score 0 on correctness. Groups whose completions "
        "all score the same give GRPO no learning signal.",
    ),
    Panel(
        "eval",
        "Held-out evaluation",
        names=(m.EVAL_ACCURACY, m.EVAL_STRICT_ACCURACY, m.EVAL_FORMAT_RATE),
        prefixes=("eval/",),
        exclude_suffixes=("/n_scored",),  # a count: the accuracy's interval is drawn from it
        y_title="rate",
        # Rewards are not shares: on one axis a total of 2.5 squashed the rates into a band.
        right_axis=(m.EVAL_REWARD_TOTAL, "eval/rewards/"),
    ),
    Panel("perf", "Throughput", names=(m.TOKENS_PER_S,), y_title="tokens/s"),
    Panel(
        "sampler",
        "Sampler against trainer",
        names=(
            m.GEN_IS_RATIO_MEAN,
            m.GEN_IS_CLIPPED_SHARE,
            m.STALENESS,
            m.OVERLAP_SHARE,
            m.GEN_LOGPROB_GAP,
        ),
        y_title="ratio / share",
        right_axis=(m.GEN_LOGPROB_GAP,),
        only_for=("grpo", "rloo"),
        note="Log-prob gap (right axis): how far the sampler's log-probabilities of its tokens "
        "are from the trainer's, nats per token; bf16 on a GPU gives about 0.01. With "
        "training.rollout async a step trains on completions sampled one update earlier "
        "(staleness 1): each token is weighed by the ratio of the two policies, capped at 3; a "
        "mean far from 1 or a rising clipped share means the policy moves too far per update. "
        "Overlap: the share of the sampling the step did not wait for.",
    ),
    Panel(
        "value",
        "Value head (PPO)",
        names=(m.PPO_EXPLAINED_VARIANCE, m.PPO_VALUE_MEAN, m.PPO_RETURN_MEAN),
        y_title="value",
        only_for=("ppo",),
        note="Explained variance: near 1 is a critic that predicts the returns; 0 is no better "
        "than a constant; below 0 is worse than a constant, and its advantages add noise (a "
        "note says so when it stays there after the warm-up). Healthy runs rise above 0 within "
        "tens of steps. The value loss (Loss chart) of a constant critic at the mean return is "
        "about half the square of the reward's std (0.5 with ppo.reward_normalization); a "
        "learning critic's falls below that. Value mean "
        "should follow return mean.",
    ),
)


def panels_for(names: Iterable[str]) -> dict[str, list[str]]:
    """``{panel key: metric names it draws}`` for the given series names."""
    names = list(names)
    return {p.key: p.select(names) for p in PANELS}


def changed_panels(changed: Iterable[str]) -> set[str]:
    """Keys of the panels that draw any of the changed series."""
    changed = list(changed)
    return {p.key for p in PANELS if any(p.matches(n) for n in changed)}
