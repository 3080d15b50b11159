"""The held-out evaluation a run does at step 0, every ``eval_steps`` and at its end."""

from __future__ import annotations

import logging
from typing import Any

from engine.config.run_config import RunConfig
from engine.generation.runner import GenerationRunner
from engine.generation.settings import SamplingSettings
from engine.tracking import metric_names
from engine.tracking.evaluation import evaluate
from engine.tracking.heldout_rewards import heldout_reward_metrics
from engine.tracking.recorder import RunRecorder
from storage.sqlite.schema import RunPhase

logger = logging.getLogger("engine.run.worker")


class HeldoutEvaluation:
    """``evaluation(policy, step)`` samples the held-out rows and returns their metrics: the
    run's own reward on them, and for the built-in task its answer and format checks."""

    def __init__(
        self,
        config: RunConfig,
        tokenizer: Any,
        rows: list[dict[str, Any]],
        recorder: RunRecorder,
    ) -> None:
        self.config = config
        self.tokenizer = tokenizer
        self.rows = rows
        self.recorder = recorder
        # The run's rollout sampler, once its trainer exists: held-out prompts sample on it.
        self.runner: GenerationRunner | None = None

    def __call__(self, policy: Any, step: int) -> dict[str, float]:
        logger.info("Evaluating %d held-out prompts at step %d", len(self.rows), step)
        self.recorder.phase(RunPhase.EVALUATING, step)  # the caller records what comes next
        config = self.config
        if config.tools.enabled:
            return self._with_tools(policy, step)
        report = evaluate(
            policy,
            self.tokenizer,
            self.rows,
            SamplingSettings(
                temperature=config.generation.temperature,
                max_new_tokens=config.generation.max_completion_length,
                num_samples=1,
                seed=config.training.seed,
            ),
            runner=self.runner,
        )
        logger.info(
            "Held-out at step %d: accuracy %.3f, format %.3f",
            step,
            report.accuracy,
            report.format_rate,
        )
        # The reward as it scores at this step (weight schedules applied).
        metrics = heldout_reward_metrics(config.reward.at_step(step), self.rows, report.samples)
        if config.data.source == "builtin":  # the task's own answer and format checks
            metrics |= {
                metric_names.EVAL_ACCURACY: report.accuracy,
                metric_names.EVAL_STRICT_ACCURACY: report.strict_accuracy,
                metric_names.EVAL_FORMAT_RATE: report.format_rate,
                metric_names.EVAL_SCORED: float(report.n_scored),
            }
        return metrics

    def _with_tools(self, policy: Any, step: int) -> dict[str, float]:
        """A run with tools answers held-out prompts through the tool loop, as it trains: the
        final answer's accuracy and how the tools were used (:mod:`tool_evaluation`)."""
        from engine.config.toolbox import toolbox_for
        from engine.tools.template import prepare_tool_tokenizer
        from engine.tracking.tool_evaluation import evaluate_with_tools

        config = self.config
        prepare_tool_tokenizer(self.tokenizer, config.model.name_or_path)
        # Each round through transformers' generate: the run's compiled runner samples one turn.
        report = evaluate_with_tools(
            policy,
            self.tokenizer,
            self.rows,
            toolbox_for(config.tools),
            temperature=config.generation.temperature,
            max_new_tokens=config.generation.max_completion_length,
            seed=config.training.seed,
        )
        logger.info(
            "Held-out at step %d with tools: accuracy %.3f, useful calls %.3f",
            step,
            report.accuracy,
            report.useful_call_rate,
        )
        spec = config.reward.at_step(step)
        return heldout_reward_metrics(spec, self.rows, report.samples) | report.metrics()
