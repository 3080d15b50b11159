"""What the exported reward module runs besides this library's own component sources.

:func:`rewards.export.export_module` inlines this file after the components' sources, as it
inlines them (imports of ``rewards`` cut, the rest kept verbatim), with the spec's values
written into the three data slots below. So the exported ``score``, ``weights_at`` and
``schedule_callback`` are code ruff and the type checker read here, not text in a template:
``score`` totals with the composer's own :func:`rewards.composer.weighted_total`, and
``weights_at`` with the schedule's own :func:`rewards.schedule.scheduled_weight`.

Where the app runs a part differently, this file holds the exported module's version:
math-verify runs in this process (with its own timeouts in the main thread, as TRL's
``accuracy_reward`` does) instead of in supervised workers; components receive every parameter
(the spec's validated values), so the registry's defaults are not needed; and a ``python``
component runs its code in the importing process, on its first call, where the app runs it in a
child process with time and memory limits.
"""

from __future__ import annotations

import threading
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.components.code_format import CodeFormat
from rewards.components.conciseness import Conciseness
from rewards.components.correctness import Correctness
from rewards.components.format import Format
from rewards.components.judge import Judge
from rewards.components.language import Language
from rewards.components.python_values import UserCodeError, read_values
from rewards.components.reasoning_steps import ReasoningSteps
from rewards.components.relative_length import RelativeLength
from rewards.components.repetition import Repetition
from rewards.components.reward_model import RewardModel
from rewards.components.rule import Rule
from rewards.components.similarity import Similarity
from rewards.components.tool_answer import ToolAnswer
from rewards.components.tool_budget import ToolBudget
from rewards.components.tool_errors import ToolErrors
from rewards.components.tool_format import ToolFormat
from rewards.composer import weighted_total
from rewards.schedule import scheduled_weight
from rewards.verification.mathcheck import CheckResult, check

# --- data slots: the export writes the spec's values here ---

#: What the reward rewards, in the spec's words.
DESCRIPTION = ""
#: The spec as a dict (``RewardSpec.to_dict``).
SPEC: dict[str, Any] = {}
#: The enabled components: name, component, weight, params (every one), schedule.
_ENABLED: list[dict[str, Any]] = []

# --- the parts the exported module runs its own way ---


class _InProcessChecker:
    """math-verify in this process; its own timeouts where signals work (the main thread)."""

    def check_many(self, pairs: list[tuple[str, str]]) -> list[CheckResult]:
        main = threading.current_thread() is threading.main_thread()
        return [check(gold, pred, 10 if main else None) for gold, pred in pairs]


def get_checker() -> _InProcessChecker:
    return _InProcessChecker()


# Components fill left-out parameters from their ParamSpecs (registry-only, left out of the
# export); the exported module always passes every parameter.
PARAMS = ()


def with_defaults(_specs: Any, given: dict[str, Any]) -> dict[str, Any]:
    return dict(given)


class PythonCode(RewardComponent):
    """Your own reward(completions, **columns), exported as text and run in this process.

    Its values are read as the app reads them (``read_values``): a raise or a bad value leaves
    the batch unscored."""

    component = "python"

    def __init__(
        self,
        name: str | None = None,
        *,
        code: str,
        path: str = "",
        timeout_s: float | None = None,
        memory_mb: int | None = None,
    ) -> None:
        super().__init__(name)
        self.code = code
        self._reward: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_reward": None}

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        columns = {k: ctx.column(k) for k in ctx.columns}
        if ctx.prompts is not None:
            columns["prompts"] = list(ctx.prompts)
        try:
            if self._reward is None:
                namespace: dict[str, Any] = {"__name__": "__reward__"}
                exec(compile(self.code, f"<reward {self.__name__}>", "exec"), namespace)
                if not callable(namespace.get("reward")):
                    raise NameError("the code defines no function named 'reward'")
                self._reward = namespace["reward"]
            values = self._reward(texts, **columns)
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"[:500]
            why = f"python component {self.__name__!r}: reward() raised {detail}"
            return [Judgement(None, why) for _ in texts]
        try:
            return read_values(self.__name__, values, len(texts))
        except UserCodeError as err:
            return [Judgement(None, str(err)) for _ in texts]


#: The component classes the module can build, by component name.
CLASSES: dict[str, type[RewardComponent]] = {
    cls.component: cls
    for cls in (
        Correctness,
        Format,
        ReasoningSteps,
        Repetition,
        Conciseness,
        Language,
        Rule,
        RelativeLength,
        CodeFormat,
        Similarity,
        RewardModel,
        Judge,
        PythonCode,
        ToolFormat,
        ToolErrors,
        ToolBudget,
        ToolAnswer,
    )
}

# --- the reward ---


def weights_at(step: int) -> list[float]:
    """The components' weights in force at training step ``step`` (the first step is 1)."""
    return [scheduled_weight(e["weight"], e["schedule"], step) for e in _ENABLED]


def build_reward_funcs() -> tuple[list[RewardComponent], list[float]]:
    """One reward function per enabled component, and their weights at the first step."""
    funcs = [CLASSES[e["component"]](e["name"], **e["params"]) for e in _ENABLED]
    return funcs, weights_at(1)


def schedule_callback(trainer: Any) -> Any:
    """A TRL callback that sets ``trainer.reward_weights`` to ``weights_at(step)`` before each
    step (``step = state.global_step + 1``), as the app's weight schedule does."""
    import torch
    from transformers import TrainerCallback

    class WeightSchedule(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            values = torch.tensor(weights_at(state.global_step + 1), dtype=torch.float32)
            trainer.reward_weights.copy_(values.to(trainer.reward_weights.dtype))

    return WeightSchedule()


reward_funcs, reward_weights = build_reward_funcs()


def score(completions: list[Any], step: int | None = None, **kwargs: Any) -> list[float | None]:
    """Weighted totals as the app's composer (and TRL) sums them: None components skipped; all
    None gives None. ``step``: use the weights in force at that training step."""
    weights = reward_weights if step is None else weights_at(step)
    values = [fn(completions, **kwargs) for fn in reward_funcs]
    return [weighted_total([v[i] for v in values], weights) for i in range(len(completions))]
