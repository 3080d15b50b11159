"""RunConfig -> TRL 1.16's config and our GRPO or RLOO trainer (:mod:`.grpo`, :mod:`.rloo`).

GRPO: Shao et al. 2024, "DeepSeekMath" §4 (TRL's GRPOTrainer); RLOO: Ahmadian et al. 2024,
"Back to Basics" (TRL's RLOOTrainer). One optimizer step covers ``prompts_per_step`` prompts,
each sampled ``num_generations`` times; the step is split evenly over GPUs and micro-batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import ProgressCallback
from trl import GRPOConfig, RLOOConfig

from engine.config.run_config import RunConfig
from engine.config.toolbox import toolbox_for
from engine.tools.template import prepare_tool_tokenizer
from engine.tracking.trackers import tracker_args
from engine.trainers.finite_updates import UpdateGuard
from engine.trainers.trl.extras import StudioExtras
from engine.trainers.trl.grpo import StudioGRPOTrainer
from engine.trainers.trl.rloo import StudioRLOOTrainer
from rewards.trl_adapter import to_trl


def _common_args(config: RunConfig, output_dir: str, *, show_progress: bool) -> dict[str, Any]:
    t, g = config.training, config.generation
    on_gpu = torch.cuda.is_available()
    return {
        "output_dir": output_dir,
        "max_steps": t.steps,
        "per_device_train_batch_size": config.per_device_batch_size(),
        "gradient_accumulation_steps": config.gradient_accumulation_steps(),
        "learning_rate": t.learning_rate,
        "lr_scheduler_type": t.lr_scheduler,
        "warmup_steps": t.warmup_steps,
        "max_grad_norm": t.max_grad_norm,
        "seed": t.seed,
        "data_seed": t.seed,
        "logging_steps": t.logging_steps,
        "save_strategy": "steps" if t.save_steps else "no",
        "save_steps": t.save_steps or t.steps,
        "save_total_limit": t.save_total_limit,
        "report_to": list(t.report_to) or "none",
        **tracker_args(config, output_dir),  # trackio: into the run folder, never the Hub
        "num_generations": g.num_generations,
        "max_completion_length": g.max_completion_length,
        "temperature": g.temperature,
        "top_p": g.top_p,
        # Recomputing activations only pays off for big models on a GPU: off unless asked.
        "activation_checkpointing": t.activation_checkpointing,
        "bf16": on_gpu and torch.cuda.is_bf16_supported(),
        "use_cpu": not on_gpu,
        "disable_tqdm": not show_progress,
        "dataloader_num_workers": 0,
        # The loader yields prompt rows (text), not tensors: pinning only walks them.
        "dataloader_pin_memory": False,
        "log_completions": False,
        # generation.backend vllm: TRL samples with vLLM inside this process.
        **({"use_vllm": True, "vllm_mode": "colocate"} if g.backend == "vllm" else {}),
    }


def build_trl_args(config: RunConfig, output_dir: str, *, show_progress: bool = False):
    """The TRL ``GRPOConfig`` or ``RLOOConfig`` for ``config``."""
    args = _common_args(config, output_dir, show_progress=show_progress)
    # The weights of the first step; a schedule moves them before each step (weight_schedule).
    args["reward_weights"] = config.reward.weights_at(1)
    if config.algorithm == "grpo":
        return GRPOConfig(
            **args,
            **config.grpo.trl_args(),
            multi_objective_aggregation=config.reward.aggregation,
            # Each iteration runs at least one call, so the budget bounds the iterations too.
            max_tool_calling_iterations=config.tools.max_tool_calls
            if config.tools.enabled
            else None,
        )
    if config.algorithm == "rloo":
        return RLOOConfig(**args, **config.rloo.trl_args())
    raise ValueError(f"algorithm {config.algorithm!r} is not trained through TRL")


def build_trl_trainer(
    config: RunConfig,
    model,
    tokenizer,
    train_dataset,
    output_dir: str,
    callbacks: list,
    *,
    show_progress: bool = False,
    before_checkpoint_publish: Callable[[], None] | None = None,
    record_metrics: Callable[[int, dict[str, float]], None] | None = None,
    prompt_width: int = 0,
    update_guard: UpdateGuard | None = None,
):
    """A ready GRPO/RLOO trainer whose reward functions come from ``config.reward``;
    ``before_checkpoint_publish`` runs before each checkpoint becomes visible;
    ``record_metrics(step, metrics)`` gets the scheduled reward weights of each step;
    ``update_guard`` drops (and reports) an update whose gradients are not finite;
    ``prompt_width``: the longest prompt in tokens, which the sampler's first cache holds."""
    reward_funcs, _ = to_trl(config.reward)  # the weights: per step, from the spec's schedules
    if config.tools.enabled and prompt_width:
        # A later turn's prompt is the first one, the turns so far and the tool results: TRL
        # keeps all of that within max_completion_length of the prompt.
        prompt_width += config.generation.max_completion_length
    extras = StudioExtras(
        backend=config.generation.backend,
        prompt_width=prompt_width,
        update_guard=update_guard or UpdateGuard(),
        before_publish=before_checkpoint_publish,
        schedule=config.reward if config.reward.has_schedules else None,
        world_model_coeff=config.grpo.world_model_coeff,
        world_loss_normalization=config.grpo.world_loss_normalization,
        rollout=config.training.rollout,
        **({"record_metrics": record_metrics} if record_metrics else {}),
    )
    trainer_cls = StudioGRPOTrainer if config.algorithm == "grpo" else StudioRLOOTrainer
    trainer = trainer_cls(
        model=model,
        reward_funcs=reward_funcs,
        args=build_trl_args(config, output_dir, show_progress=show_progress),
        train_dataset=train_dataset,
        processing_class=tokenizer,
        callbacks=callbacks,
        extras=extras,
        **tool_args(config, tokenizer),
    )
    if show_progress:  # a bar with the reward, instead of every log dict printed under it
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(CompactProgress())
    return trainer


def tool_args(config: RunConfig, tokenizer: Any) -> dict[str, Any]:
    """The trainer's tool arguments: the run's toolbox as TRL's per-rollout environment
    (:mod:`engine.tools.toolbox`), once the tokenizer is checked to carry tool calls."""
    tools = config.tools
    if not tools.enabled:
        return {}
    prepare_tool_tokenizer(tokenizer, config.model.name_or_path)
    return {"environment_factory": toolbox_for(tools)}


class CompactProgress(ProgressCallback):
    """The Trainer's progress bar, showing the latest reward and loss as its postfix."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.training_bar is not None and logs and "reward" in logs:
            self.training_bar.set_postfix(
                reward=f"{logs['reward']:.3f}", loss=f"{logs.get('loss', 0):.3f}"
            )
