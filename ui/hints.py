"""Plain-language hints for the places where users of RL fine-tuning get stuck.

Each function looks at numbers the dashboard already has (latest metrics of a run, or a preview's
samples) and returns sentences; the tabs show them as they are. Thresholds are stated in the
sentences so a user can judge them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.tracking import metric_names as m

LOSS_NEAR_ZERO = 1e-3
ZERO_STD_WARN = 0.5
CLIPPED_WARN = 0.1
GROUP_ALGORITHMS = ("grpo", "rloo")


def run_hints(algorithm: str, latest: Mapping[str, float]) -> list[str]:
    """Hints for a run from the newest value of each metric."""
    hints = []
    loss = latest.get(m.LOSS_POLICY)
    if algorithm in GROUP_ALGORITHMS and loss is not None and abs(loss) < LOSS_NEAR_ZERO:
        hints.append(
            f"Policy loss is {loss:.2g}, close to 0: that is normal in {algorithm.upper()}. The "
            "advantages are centred within each group of completions, so the loss averages to "
            "about zero even while the policy learns. Judge progress by the reward and the "
            "held-out accuracy."
        )
    zero_std = latest.get(m.REWARD_ZERO_STD_FRACTION)
    if zero_std is not None and zero_std >= ZERO_STD_WARN:
        hints.append(
            f"{zero_std:.0%} of prompt groups scored identically on every completion: those "
            "groups have zero advantage and teach nothing. Raise the temperature or the number "
            "of generations, use prompts the model sometimes (not always or never) solves, or "
            "add a graded component (format, reasoning steps) beside correctness."
        )
    clipped = latest.get(m.COMPLETION_CLIPPED_RATIO)
    if clipped is not None and clipped >= CLIPPED_WARN:
        hints.append(
            f"{clipped:.0%} of completions hit the length limit. A truncated completion has no "
            "final answer, so correctness scores it 0 even when the reasoning was right: raise "
            "max completion length, or reward conciseness."
        )
    return hints


def preview_hints(truncated: Sequence[bool]) -> list[str]:
    """Hints for a preview beyond the reward library's group diagnostics: truncation."""
    if not truncated:
        return []
    share = sum(truncated) / len(truncated)
    if share < CLIPPED_WARN:
        return []
    return [
        f"{share:.0%} of these completions were cut off at max tokens: a truncated completion "
        "has no final answer, so correctness scores it 0. Raise max new tokens."
    ]


def status_hint(status: str) -> str:
    """One sentence on what a run status means and what the user can do."""
    return {
        "queued": "Waiting for a free training slot; it starts when the running run ends.",
        "running": "Training. Charts and samples update every second.",
        "completed": "Finished all its steps. The final model is in the run's folder.",
        "stopped": "Stopped by request after saving a checkpoint. Resume continues from it.",
        "failed": "The run failed; the error and its traceback are below. Fix the cause and "
        "resume, or start a new run.",
        "interrupted": "The worker process ended without a final status (killed, out of memory "
        "or a restart). Resume continues from the last checkpoint.",
    }.get(status, "")
