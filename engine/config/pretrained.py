"""Starting settings for a pretrained model, by the device it will train on.

The config's own defaults are tuned for the tiny shipped model. A pretrained model (hundreds of
millions of parameters and up) starts from LoRA (Hu et al. 2021) and these settings instead;
they depend on the device, since what learns in ten minutes on a CPU is not what learns in five
on a GPU:

- **CPU**: 2 prompts x 8 completions of up to 64 tokens a step, LoRA on the last 8 decoder
  layers only, and a learning rate of 1e-3. A CPU's update is bound by its arithmetic: on two
  cores SmolLM2's step of 4 prompts x 8 x 160 tokens with LoRA on all 30 layers took about 90 s
  (7 updates in ten minutes, nothing learned); with the backward stopping at layer 22, half the
  samples and 64 tokens it took about 24 s (25 updates in ten minutes), and with each prompt
  run once in the update (:mod:`engine.trainers.trl.shared_prompt`) 11-14 s, and about 9.5 s with
  the static-cache sampler (about 70 updates). 25 updates are at the edge of what this task
  learns in; at 50 updates this suggestion rose in 4 seeds of 4 on a GPU (+8.9 points on
  average, against +5.1 at 5e-4 and -0.7 at 2e-4). Five seeds trained for 25 updates on a GPU
  (bench/settings_sweep.py, issue 22): 64 tokens raised held-out accuracy 2.5 points on average
  and beat 128 tokens (16 updates, -2.3) in 4 seeds of 5; learning rates of 3e-4 and 2e-3,
  temperature 0.6 and groups of 4 all did worse than 1e-3 with groups of 8. What ten CPU minutes
  learn varies with the seed (three runs of 25 updates on two cores: +4.2, -0.8 and -1.6); thirty
  minutes at 128 tokens raised accuracy from 6% to 15%.
- **GPU**: 32 prompts x 8 completions a step, the micro-batch left empty so the worker picks the
  largest that fits the card (:func:`engine.planning.micro_batch.with_default_micro_batch`), and a
  learning rate of 2e-4. LoRA's best learning rate is about ten times full fine-tuning's ("LoRA
  Without Regret", Schulman et al. 2025, Thinking Machines), and on SmolLM2-135M-Instruct with the
  built-in task 5e-5 was measured learning, but slowly (8.5% -> 28.5% held-out accuracy in 4
  minutes on one H100, issue 22). No adapter dropout: the sampler runs the model without it, so
  dropout would only add noise and a copy of each adapted layer's input to the update. Up to
  96 new tokens: the worked example's reply is about 30, and a step's sampling and update both
  grow with its longest completion (TRL pads a step's completions to it), so the first steps,
  where an untrained model runs on to the limit, are the slowest. On one H200 (issue 22, five
  minutes, seed 0) 96 tokens fit 596 steps against 466 at 160 and reached 66.5% held-out accuracy
  against 63.5% (65% at seed 1); the first steps took about 0.5 s against 0.85 (medians 0.37 and
  0.39 s), and the peak was 38 GiB against 48.

Either way the reward starts from an instruct preset (:func:`pretrained_preset`) and the
built-in task's system prompt shows one worked example in the format the reward pays for
(:data:`engine.tasks.WORKED_EXAMPLE_SYSTEM_PROMPT`): an instruct model that never writes
``<think>`` earns nothing from a strict format reward (issue 22: format 0 on every sample), so
the preset scores the tags softly (a share per tag) and the example shows them. On the CPU the
preset also pays for ending at ``</answer>``: at 45-56 updates, without that bonus two runs of
two learned the tags and then filled their tokens after ``</answer>`` (strict format 0.02,
accuracy +2.8 and -1.0 points); with it strict format rose to 0.85 and 0.67 and accuracy by 2.8
and 2.0 points, and with the ~70 updates of the static-cache sampler to 0.96 and 0.97, and
accuracy from 5% to 22% and from 6% to 11% (bench/RESULTS.md).
"""

from __future__ import annotations

from typing import Any

from engine.config.run_config import RunConfig
from engine.models.specs import DEFAULT_MODEL_ALIAS
from engine.tasks import WORKED_EXAMPLE_SYSTEM_PROMPT
from rewards.presets import INSTRUCT_PRESET, INSTRUCT_STOP_PRESET
from rewards.spec import preset

CPU_SETTINGS: dict[str, Any] = {
    "training.learning_rate": 1e-3,
    "training.prompts_per_step": 2,
    "training.micro_batch_size": 16,
    "generation.max_completion_length": 64,
}
GPU_SETTINGS: dict[str, Any] = {
    "training.learning_rate": 2e-4,
    "training.prompts_per_step": 32,
    "training.micro_batch_size": None,  # picked from the memory estimate for the card
    "generation.max_completion_length": 96,
}
LORA: dict[str, Any] = {"r": 16, "alpha": 32, "dropout": 0.0}
CPU_LORA_LAST_LAYERS = 8  # the backward stops there: the CPU's update is its arithmetic


def pretrained_settings(on_gpu: bool) -> dict[str, Any]:
    """Form and config values (by dotted field path) for a pretrained model on a GPU or CPU."""
    return dict(GPU_SETTINGS if on_gpu else CPU_SETTINGS)


def pretrained_lora(on_gpu: bool) -> dict[str, Any]:
    """The LoRA adapter suggested for a pretrained model on a GPU or CPU."""
    return {**LORA, "last_layers": 0 if on_gpu else CPU_LORA_LAST_LAYERS}


def pretrained_preset(on_gpu: bool) -> str:
    """The reward preset a pretrained model starts from on a GPU or CPU."""
    return INSTRUCT_PRESET if on_gpu else INSTRUCT_STOP_PRESET


def local_gpu() -> bool:
    """Whether this machine has an NVIDIA GPU (asked of nvidia-smi: no CUDA in this process)."""
    from engine.runtime.devices import list_gpus

    return bool(list_gpus())


def pretrained_summary(on_gpu: bool) -> str:
    """The pretrained-model suggestions in words, for the form and the CLI."""
    s, lora = pretrained_settings(on_gpu), pretrained_lora(on_gpu)
    micro = s["training.micro_batch_size"]
    micro_text = f"micro-batches of {micro}" if micro else "the micro-batch picked to fit the card"
    layers = f", the last {lora['last_layers']} layers" if lora["last_layers"] else ""
    return (
        f"on {'a GPU' if on_gpu else 'the CPU'}: LoRA (r {lora['r']}{layers}), learning rate "
        f"{s['training.learning_rate']:g}, {s['training.prompts_per_step']} prompts per step, "
        f"{micro_text}, up to {s['generation.max_completion_length']} new tokens; the reward "
        f"preset {pretrained_preset(on_gpu)!r} and a system prompt with one worked example"
    )


def suggested_config(model: str = DEFAULT_MODEL_ALIAS, on_gpu: bool | None = None) -> RunConfig:
    """A starting config for ``model``: the defaults for the shipped default model; for any
    other model LoRA, :func:`pretrained_settings` for the device (``None``: this machine's),
    its reward preset and the worked-example system prompt on top of them."""
    data = RunConfig().to_dict()
    data["model"]["name_or_path"] = model
    if model == DEFAULT_MODEL_ALIAS:
        return RunConfig.from_dict(data)
    gpu = local_gpu() if on_gpu is None else on_gpu
    data["model"]["lora"] = pretrained_lora(gpu)
    for path, value in pretrained_settings(gpu).items():
        section, name = path.split(".")
        data[section][name] = value
    data["reward"] = preset(pretrained_preset(gpu)).to_dict()
    data["data"]["system_prompt"] = WORKED_EXAMPLE_SYSTEM_PROMPT
    return RunConfig.from_dict(data)
