"""Held-out evaluation with tools: each prompt answered through the tool loop, as in training.

The rollouts come from :func:`engine.tools.rollout.sample_tool_rollouts` (TRL's loop: call,
result, answer). Accuracy is the ``correctness`` check (math mode, the ``answer`` column) of the
last assistant turn, the outcome the agent components pay (``tool_answer``); the rates say how
the tools were used:

- ``call_rate``: rollouts with at least one call the trainer parsed;
- ``useful_call_rate``: rollouts with a parsed call whose result is the gold answer (the call
  did the work the answer needs);
- ``malformed_rate``: rollouts with a ``<tool_call>`` that did not parse;
- ``failed_call_rate``: rollouts with a call that came back as an error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.generation.settings import SamplingSettings
from engine.tools.rollout import sample_tool_rollouts
from engine.tools.toolbox import Toolbox
from engine.tracking import metric_names
from engine.tracking.evaluation import score_texts
from rewards.completions.tool_calls import final_text, malformed_calls, tool_calls

logger = logging.getLogger(__name__)


@dataclass
class ToolEvalReport:
    """Rates over the rollouts of one evaluation (see the module docstring); ``samples`` holds
    one record per rollout (prompt_index, text, conversation, correct)."""

    n: int = 0
    accuracy: float = 0.0
    call_rate: float = 0.0
    useful_call_rate: float = 0.0
    malformed_rate: float = 0.0
    failed_call_rate: float = 0.0
    truncated_rate: float = 0.0
    samples: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "samples"}

    def metrics(self) -> dict[str, float]:
        """The run's held-out metrics of this report, by their stored names."""
        return {
            metric_names.EVAL_ACCURACY: self.accuracy,
            metric_names.EVAL_TOOL_CALL_RATE: self.call_rate,
            metric_names.EVAL_USEFUL_CALL_RATE: self.useful_call_rate,
            metric_names.EVAL_MALFORMED_CALL_RATE: self.malformed_rate,
        }


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def evaluate_with_tools(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    toolbox: type[Toolbox],
    temperature: float = 0.8,
    max_new_tokens: int = 192,
    seed: int = 0,
) -> ToolEvalReport:
    """One tool rollout per row, scored as the module docstring says."""
    if not rows:
        raise ValueError("rows must not be empty")
    import torch

    with torch.compiler.set_stance("force_eager"):  # as engine.tracking.evaluation does
        rollouts = sample_tool_rollouts(
            model,
            tokenizer,
            [r["prompt"] for r in rows],
            toolbox,
            SamplingSettings(
                temperature=temperature, max_new_tokens=max_new_tokens, num_samples=1, seed=seed
            ),
            rows=rows,
        )
    golds = [rows[r.prompt_index].get("answer") for r in rollouts]
    correct, _ = score_texts([final_text(r.conversation) for r in rollouts], golds)
    records, calls, useful, malformed, failed = [], [], [], [], []
    for rollout, gold, ok in zip(rollouts, golds, correct, strict=True):
        made = tool_calls(rollout.conversation)
        calls.append(bool(made))
        useful.append(any(c.result is not None and c.result.strip() == str(gold) for c in made))
        malformed.append(malformed_calls(rollout.conversation) > 0)
        failed.append(any(c.error is not None for c in made))
        records.append(
            {
                "prompt_index": rollout.prompt_index,
                "text": rollout.text,
                "conversation": rollout.conversation,
                "correct": ok == 1.0,
                "truncated": rollout.truncated,
            }
        )
    report = ToolEvalReport(
        n=len(records),
        accuracy=_share([r["correct"] for r in records]),
        call_rate=_share(calls),
        useful_call_rate=_share(useful),
        malformed_rate=_share(malformed),
        failed_call_rate=_share(failed),
        truncated_rate=_share([r["truncated"] for r in records]),
        samples=records,
    )
    logger.info(
        "evaluated %d tool rollouts: accuracy %.3f, calls %.3f, useful calls %.3f",
        report.n,
        report.accuracy,
        report.call_rate,
        report.useful_call_rate,
    )
    return report
