"""RunConfig: one file that fully describes a run, shared by the UI, the CLI and the worker.

Each knob is one documented dataclass field (the ``help`` metadata is also what
``python -m engine export-config`` writes as comments). Validation happens in ``__post_init__``
and raises :class:`ConfigError` naming the dotted field, what was wrong and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.dataclass_io import ConfigError, from_dict, parse_yaml, to_dict, to_plain
from engine.datasets import DataSpec
from engine.generation.backend import check_available
from engine.models import DEFAULT_MODEL_ALIAS, ModelSpec
from rewards.spec import DEFAULT_PRESET, RewardSpec, preset

ALGORITHMS = ("grpo", "rloo", "ppo")
GRPO_LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")
LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")
REPORT_TO = ("tensorboard", "wandb", "trackio")
PPO_KL_MODES = ("fixed", "adaptive")
PPO_REWARD_NORMALIZATION = ("none", "batch", "running")
PPO_VALUE_MODELS = ("shared", "separate")
GENERATION_BACKENDS = ("auto", "hf", "compiled", "vllm")
DISTRIBUTED = ("ddp", "fsdp")


def _help(text: str, choices: tuple[str, ...] = ()) -> dict[str, Any]:
    """Field metadata: the help text (form tooltip, YAML comment) and any allowed values."""
    return {"help": text, "choices": choices} if choices else {"help": text}


def _check_range(path: str, value: float, lo: float, hi: float, *, lo_open: bool = False) -> None:
    if not math.isfinite(value):
        raise ConfigError(path, f"must be a finite number, got {value!r}")
    bad_low = value <= lo if lo_open else value < lo
    if bad_low or value > hi:
        bracket = "(" if lo_open else "["
        raise ConfigError(path, f"must be in {bracket}{lo:g}, {hi:g}], got {value:g}")


def _check_choice(path: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(path, f"must be one of {', '.join(choices)}, got {value!r}")


def _check_choices(settings: Any, section: str) -> None:
    """Each field with ``choices`` metadata holds one of them (every item, for a list)."""
    for f in fields(settings):
        choices = f.metadata.get("choices")
        if not choices:
            continue
        value = getattr(settings, f.name)
        if isinstance(value, list):
            for i, item in enumerate(value):
                _check_choice(f"{section}.{f.name}[{i}]", item, choices)
        else:
            _check_choice(f"{section}.{f.name}", value, choices)


@dataclass
class GenerationSettings:
    """How completions are sampled during training."""

    num_generations: int = field(
        default=8, metadata=_help("Completions sampled per prompt (the group size), 2-64.")
    )
    max_completion_length: int = field(
        default=96, metadata=_help("Most new tokens per completion; longer ones are truncated.")
    )
    temperature: float = field(default=0.8, metadata=_help("Sampling temperature, (0, 2]."))
    top_p: float = field(default=1.0, metadata=_help("Nucleus sampling mass, (0, 1]."))
    backend: str = field(
        default="auto",
        metadata=_help(
            "Sampler during training: auto (compiled on a GPU, hf on CPU), hf (transformers' "
            "generate), compiled (static KV cache, CUDA-graph decode), vllm (TRL's colocated "
            "vLLM; needs the vllm package).",
            GENERATION_BACKENDS,
        ),
    )

    def __post_init__(self) -> None:
        _check_choices(self, "generation")
        check_available(self.backend)
        _check_range("generation.num_generations", self.num_generations, 2, 64)
        _check_range("generation.max_completion_length", self.max_completion_length, 1, 32768)
        _check_range("generation.temperature", self.temperature, 0, 2, lo_open=True)
        _check_range("generation.top_p", self.top_p, 0, 1, lo_open=True)


@dataclass
class GRPOSettings:
    """Group Relative Policy Optimization (Shao et al. 2024) as implemented by TRL's GRPOTrainer."""

    loss_type: str = field(
        default="dapo",
        metadata=_help(
            f"Loss normalisation: {', '.join(GRPO_LOSS_TYPES)} (TRL's names).", GRPO_LOSS_TYPES
        ),
    )
    beta: float = field(
        default=0.0, metadata=_help("KL penalty to the reference model; 0 loads no reference.")
    )
    epsilon: float = field(default=0.2, metadata=_help("Lower clipping range of the ratio."))
    epsilon_high: float | None = field(
        default=None, metadata=_help("Upper clipping range (DAPO uses 0.28); empty = epsilon.")
    )
    scale_rewards: str = field(
        default="group",
        metadata=_help("Divide advantages by the std of: group, batch or none.", SCALE_REWARDS),
    )
    num_iterations: int = field(
        default=1, metadata=_help("Optimisation passes over each generated batch (mu).")
    )
    mask_truncated_completions: bool = field(
        default=False,
        metadata=_help("Leave length-capped completions out of the loss."),
    )

    def __post_init__(self) -> None:
        _check_choices(self, "grpo")
        _check_range("grpo.beta", self.beta, 0, 10)
        _check_range("grpo.epsilon", self.epsilon, 0, 1, lo_open=True)
        if self.epsilon_high is not None:
            _check_range("grpo.epsilon_high", self.epsilon_high, self.epsilon, 1)
        _check_range("grpo.num_iterations", self.num_iterations, 1, 16)


@dataclass
class RLOOSettings:
    """REINFORCE Leave-One-Out (Ahmadian et al. 2024) as implemented by TRL's RLOOTrainer."""

    beta: float = field(
        default=0.0, metadata=_help("KL penalty to the reference model; 0 loads no reference.")
    )
    epsilon: float = field(default=0.2, metadata=_help("Lower clipping range of the ratio."))
    epsilon_high: float | None = field(
        default=None, metadata=_help("Upper clipping range; empty = epsilon.")
    )
    num_iterations: int = field(
        default=1, metadata=_help("Optimisation passes over each generated batch.")
    )
    normalize_advantages: bool = field(
        default=False, metadata=_help("Whiten the leave-one-out advantages over the batch.")
    )
    mask_truncated_completions: bool = field(
        default=False,
        metadata=_help("Leave length-capped completions out of the loss."),
    )

    def __post_init__(self) -> None:
        _check_range("rloo.beta", self.beta, 0, 10)
        _check_range("rloo.epsilon", self.epsilon, 0, 1, lo_open=True)
        if self.epsilon_high is not None:
            _check_range("rloo.epsilon_high", self.epsilon_high, self.epsilon, 1)
        _check_range("rloo.num_iterations", self.num_iterations, 1, 16)


@dataclass
class PPOSettings:
    """PPO for language models (Schulman et al. 2017; the RLHF recipe of Ziegler et al. 2019).

    One step samples a rollout, scores it, adds a per-token KL penalty to a frozen reference,
    estimates advantages with GAE and runs ``ppo_epochs`` passes of ``num_minibatches``
    clipped updates of the policy and its value function.
    """

    gamma: float = field(default=1.0, metadata=_help("Discount over completion tokens, [0, 1]."))
    lam: float = field(
        default=1.0,
        metadata=_help("GAE lambda, [0, 1]: 1 credits every token with the final reward."),
    )
    kl_coef: float = field(
        default=0.05,
        metadata=_help(
            "KL penalty beta per token to the reference model (start value if adaptive)."
        ),
    )
    kl_mode: str = field(
        default="fixed",
        metadata=_help(
            f"KL coefficient: {', '.join(PPO_KL_MODES)} (adaptive targets target_kl).", PPO_KL_MODES
        ),
    )
    target_kl: float = field(
        default=6.0, metadata=_help("Adaptive mode: KL to the reference per completion to aim for.")
    )
    kl_horizon: int = field(
        default=10000, metadata=_help("Adaptive mode: completions over which beta adapts.")
    )
    clip_range: float = field(default=0.2, metadata=_help("Policy ratio clipping epsilon."))
    clip_range_value: float | None = field(
        default=0.2, metadata=_help("Value clipping around the rollout values; empty = no clip.")
    )
    vf_coef: float = field(default=0.1, metadata=_help("Weight of the value loss."))
    entropy_coef: float = field(default=0.0, metadata=_help("Weight of the entropy bonus."))
    ppo_epochs: int = field(
        default=1, metadata=_help("Optimisation passes over each rollout, 1-16.")
    )
    num_minibatches: int = field(
        default=1, metadata=_help("Minibatches per pass (one optimizer update each).")
    )
    whiten_advantages: bool = field(
        default=True, metadata=_help("Normalise advantages to mean 0, std 1 over the rollout.")
    )
    reward_clip: float | None = field(
        default=None, metadata=_help("Clip sequence rewards to [-bound, bound]; empty = no clip.")
    )
    reward_normalization: str = field(
        default="none",
        metadata=_help(
            f"Standardise sequence rewards: {', '.join(PPO_REWARD_NORMALIZATION)} "
            "(running = mean/std over all steps so far).",
            PPO_REWARD_NORMALIZATION,
        ),
    )
    max_approx_kl: float | None = field(
        default=None,
        metadata=_help("Stop a step's update passes once approx KL exceeds this; empty = never."),
    )
    value_model: str = field(
        default="shared",
        metadata=_help(
            "Critic: shared (value head on the policy's last hidden state) or separate "
            "(a copy of the base model with its own head).",
            PPO_VALUE_MODELS,
        ),
    )
    value_learning_rate: float | None = field(
        default=1e-3,
        metadata=_help("Learning rate of the critic's own weights; empty = the policy's."),
    )

    def __post_init__(self) -> None:
        _check_range("ppo.gamma", self.gamma, 0, 1)
        _check_range("ppo.lam", self.lam, 0, 1)
        _check_range("ppo.kl_coef", self.kl_coef, 0, 10)
        _check_choices(self, "ppo")
        _check_range("ppo.target_kl", self.target_kl, 0, 1e6, lo_open=True)
        _check_range("ppo.kl_horizon", self.kl_horizon, 1, 1e9)
        if self.kl_mode == "adaptive" and self.kl_coef == 0:
            raise ConfigError("ppo.kl_coef", "must be > 0 in adaptive mode (it scales from there)")
        _check_range("ppo.clip_range", self.clip_range, 0, 1, lo_open=True)
        if self.clip_range_value is not None:
            _check_range("ppo.clip_range_value", self.clip_range_value, 0, 1e6, lo_open=True)
        _check_range("ppo.vf_coef", self.vf_coef, 0, 100)
        _check_range("ppo.entropy_coef", self.entropy_coef, 0, 10)
        _check_range("ppo.ppo_epochs", self.ppo_epochs, 1, 16)
        _check_range("ppo.num_minibatches", self.num_minibatches, 1, 4096)
        if self.reward_clip is not None:
            _check_range("ppo.reward_clip", self.reward_clip, 0, 1e6, lo_open=True)
        if self.max_approx_kl is not None:
            _check_range("ppo.max_approx_kl", self.max_approx_kl, 0, 1e6, lo_open=True)
        if self.value_learning_rate is not None:
            _check_range("ppo.value_learning_rate", self.value_learning_rate, 0, 1, lo_open=True)

    def check_batch(self, completions_per_device: int) -> None:
        """Each minibatch needs at least one completion on every device."""
        if self.num_minibatches > completions_per_device:
            raise ConfigError(
                "ppo.num_minibatches",
                f"each device holds {completions_per_device} completions per step, too few for "
                f"{self.num_minibatches} minibatches; use at most {completions_per_device}",
            )


@dataclass
class TrainingSettings:
    """Optimisation, schedule, checkpoints, evaluation and hardware."""

    steps: int = field(default=100, metadata=_help("Optimizer steps to train, 1-1,000,000."))
    time_budget_minutes: float | None = field(
        default=None,
        metadata=_help("End training (as completed) after this many minutes; empty = no limit."),
    )
    prompts_per_step: int = field(
        default=8, metadata=_help("Distinct prompts per optimizer step (each sampled in a group).")
    )
    micro_batch_size: int | None = field(
        default=None,
        metadata=_help(
            "Completions per forward/backward pass on each device; empty = the whole step at once. "
            "Lower it when memory runs out."
        ),
    )
    activation_checkpointing: bool = field(
        default=False,
        metadata=_help(
            "Recompute each layer's activations in the backward pass instead of keeping them: "
            "much less memory for big models, about a third more compute."
        ),
    )
    learning_rate: float = field(default=5e-5, metadata=_help("AdamW learning rate, (0, 1]."))
    lr_scheduler: str = field(
        default="constant", metadata=_help(f"Schedule: {', '.join(LR_SCHEDULERS)}.", LR_SCHEDULERS)
    )
    warmup_steps: int = field(default=0, metadata=_help("Linear warm-up steps."))
    max_grad_norm: float = field(default=1.0, metadata=_help("Gradient-norm clipping, > 0."))
    seed: int = field(default=0, metadata=_help("Seed for sampling, data order and init."))
    logging_steps: int = field(
        default=1, metadata=_help("Write metrics and samples every N steps.")
    )
    save_steps: int = field(
        default=50, metadata=_help("Checkpoint every N steps (0 = only at the end).")
    )
    save_total_limit: int = field(default=2, metadata=_help("Checkpoints kept on disk (>= 1)."))
    eval_steps: int = field(
        default=25, metadata=_help("Held-out evaluation every N steps (0 = before and after only).")
    )
    eval_samples: int = field(
        default=100, metadata=_help("Held-out prompts per evaluation (0 = no evaluation).")
    )
    samples_per_log: int = field(
        default=32, metadata=_help("Completions with their traces stored per logging step.")
    )
    num_gpus: int = field(
        default=1,
        metadata=_help("Processes for data-parallel training (>1 starts `accelerate launch`)."),
    )
    gpu_ids: str = field(
        default="",
        metadata=_help(
            "GPUs this run uses, as nvidia-smi numbers them (e.g. 0 or 0,2; as many as num_gpus); "
            "empty = the free ones with the most free memory."
        ),
    )
    distributed: str = field(
        default="ddp",
        metadata=_help(
            "With several GPUs: ddp (a full copy of the model per GPU) or fsdp (weights, "
            "gradients and optimizer sharded over the GPUs, for full fine-tunes that do not fit "
            "one card).",
            DISTRIBUTED,
        ),
    )
    report_to: list[str] = field(
        default_factory=list,
        metadata=_help(
            f"Extra trackers TRL logs to besides ours: {', '.join(REPORT_TO)}.", REPORT_TO
        ),
    )

    def __post_init__(self) -> None:
        _check_range("training.steps", self.steps, 1, 1_000_000)
        if self.time_budget_minutes is not None:
            _check_range(
                "training.time_budget_minutes", self.time_budget_minutes, 0, 1e6, lo_open=True
            )
        _check_range("training.prompts_per_step", self.prompts_per_step, 1, 4096)
        if self.micro_batch_size is not None:
            _check_range("training.micro_batch_size", self.micro_batch_size, 1, 65536)
        _check_range("training.learning_rate", self.learning_rate, 0, 1, lo_open=True)
        _check_choices(self, "training")
        _check_range("training.warmup_steps", self.warmup_steps, 0, 1_000_000)
        _check_range("training.max_grad_norm", self.max_grad_norm, 0, 1e6, lo_open=True)
        _check_range("training.seed", self.seed, 0, 2**31 - 1)
        _check_range("training.logging_steps", self.logging_steps, 1, 1_000_000)
        _check_range("training.save_steps", self.save_steps, 0, 1_000_000)
        _check_range("training.save_total_limit", self.save_total_limit, 1, 1000)
        _check_range("training.eval_steps", self.eval_steps, 0, 1_000_000)
        _check_range("training.eval_samples", self.eval_samples, 0, 100_000)
        _check_range("training.samples_per_log", self.samples_per_log, 0, 4096)
        _check_range("training.num_gpus", self.num_gpus, 1, 64)
        self.gpu_ids = self._normalized_gpu_ids()
        if self.distributed == "fsdp" and self.num_gpus < 2:
            raise ConfigError(
                "training.distributed",
                "fsdp shards the model over several GPUs; set num_gpus to 2 or more, or use ddp",
            )

    def _normalized_gpu_ids(self) -> str:
        if not isinstance(self.gpu_ids, str):
            raise ConfigError("training.gpu_ids", f"must be text like 0,1, got {self.gpu_ids!r}")
        parts = [p.strip() for p in self.gpu_ids.split(",") if p.strip()]
        if not parts:
            return ""
        if not all(p.isdigit() and int(p) < 1024 for p in parts):
            raise ConfigError(
                "training.gpu_ids",
                f"must be GPU numbers separated by commas (e.g. 0,1), got {self.gpu_ids!r}",
            )
        ids = [int(p) for p in parts]
        if len(set(ids)) != len(ids):
            raise ConfigError("training.gpu_ids", f"lists a GPU twice: {self.gpu_ids!r}")
        if len(ids) != self.num_gpus:
            raise ConfigError(
                "training.gpu_ids",
                f"names {len(ids)} GPUs for num_gpus {self.num_gpus}; name exactly {self.num_gpus}"
                " or leave it empty",
            )
        return ",".join(map(str, ids))

    @property
    def gpu_list(self) -> list[int]:
        """``gpu_ids`` as numbers ([] = pick free GPUs)."""
        return [int(p) for p in self.gpu_ids.split(",") if p]


@dataclass
class RunConfig:
    """Everything a run needs: model, data, reward, algorithm and its hyperparameters."""

    name: str = field(default="", metadata=_help("A label shown in the dashboard."))
    algorithm: str = field(default="grpo", metadata=_help(f"One of {', '.join(ALGORITHMS)}."))
    model: ModelSpec = field(default_factory=ModelSpec)
    data: DataSpec = field(default_factory=DataSpec)
    reward: RewardSpec = field(default_factory=lambda: preset(DEFAULT_PRESET))
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    grpo: GRPOSettings = field(default_factory=GRPOSettings)
    rloo: RLOOSettings = field(default_factory=RLOOSettings)
    ppo: PPOSettings = field(default_factory=PPOSettings)

    def __post_init__(self) -> None:
        _check_choice("algorithm", self.algorithm, ALGORITHMS)
        if len(self.name) > 200:
            raise ConfigError("name", f"must be at most 200 characters, got {len(self.name)}")
        self._check_batch_rule()
        if self.training.distributed == "fsdp" and self.model.load_in_4bit:
            raise ConfigError(
                "training.distributed",
                "fsdp cannot shard 4-bit weights; turn model.load_in_4bit off or use ddp",
            )
        if self.algorithm == "ppo":
            self.ppo.check_batch(self.completions_per_step // self.training.num_gpus)

    @property
    def completions_per_step(self) -> int:
        return self.training.prompts_per_step * self.generation.num_generations

    def per_device_batch_size(self) -> int:
        """Completions per device per forward pass (TRL's ``per_device_train_batch_size``)."""
        per_device = self.completions_per_step // self.training.num_gpus
        return min(per_device, self.training.micro_batch_size or per_device)

    def gradient_accumulation_steps(self) -> int:
        per_device = self.completions_per_step // self.training.num_gpus
        return per_device // self.per_device_batch_size()

    def _check_batch_rule(self) -> None:
        # TRL: per_device_train_batch_size * processes * steps_per_generation must hold whole
        # prompt groups. We size the step as prompts_per_step * num_generations completions and
        # split it evenly over GPUs and micro-batches, so both splits must be exact.
        total, gpus = self.completions_per_step, self.training.num_gpus
        p, g = self.training.prompts_per_step, self.generation.num_generations
        if total % gpus:
            raise ConfigError(
                "training.num_gpus",
                f"each step's {p} prompts x {g} generations = {total} completions must split "
                f"evenly over {gpus} GPUs; choose prompts_per_step so that {total} is a "
                f"multiple of {gpus}",
            )
        micro = self.training.micro_batch_size
        if micro is not None and (total // gpus) % min(micro, total // gpus):
            raise ConfigError(
                "training.micro_batch_size",
                f"each GPU handles {total // gpus} completions per step, which must be a "
                f"multiple of micro_batch_size {micro}; pick a divisor of {total // gpus}",
            )

    # ---- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        return from_dict(cls, data)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    @classmethod
    def from_yaml(cls, text: str) -> RunConfig:
        return cls.from_dict(parse_yaml(text) or {})

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_yaml(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> RunConfig:
        path = Path(path)
        if path.is_dir():
            raise ConfigError("", f"{path} is a folder; give the run config file (YAML)")
        if not path.is_file():
            raise ConfigError("", f"config file {path} does not exist")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ConfigError("", f"config file {path} is not UTF-8 text (YAML)") from None
        return cls.from_yaml(text)


# Starting points for a pretrained model (hundreds of millions of parameters) instead of the tiny
# default one, whose values the config's own defaults are tuned for: LoRA on, a smaller learning
# rate, room for real reasoning, fewer prompts per step and micro-batches that fit memory.
PRETRAINED_SETTINGS: dict[str, Any] = {
    "training.learning_rate": 1e-5,
    "training.prompts_per_step": 4,
    "training.micro_batch_size": 8,
    "generation.max_completion_length": 256,
}
PRETRAINED_LORA = {"r": 16, "alpha": 32}


def pretrained_summary() -> str:
    """The pretrained-model suggestions in words, for the form and the CLI."""
    s = PRETRAINED_SETTINGS
    return (
        f"LoRA (r {PRETRAINED_LORA['r']}), learning rate {s['training.learning_rate']:g}, "
        f"{s['training.prompts_per_step']} prompts per step, micro-batches of "
        f"{s['training.micro_batch_size']}, up to {s['generation.max_completion_length']} new "
        "tokens"
    )


def suggested_config(model: str = DEFAULT_MODEL_ALIAS) -> RunConfig:
    """A starting config for ``model``: the defaults for the shipped default model; for any
    other model, LoRA and ``PRETRAINED_SETTINGS`` on top of them."""
    data = RunConfig().to_dict()
    data["model"]["name_or_path"] = model
    if model != DEFAULT_MODEL_ALIAS:
        data["model"]["lora"] = dict(PRETRAINED_LORA)
        for path, value in PRETRAINED_SETTINGS.items():
            section, name = path.split(".")
            data[section][name] = value
    return RunConfig.from_dict(data)


def documented_yaml(config: RunConfig | None = None) -> str:
    """The config as YAML, each field preceded by its help text as a comment."""
    config = config or RunConfig()
    lines = ["# Reward Studio run config. Run it with: python -m engine train THIS_FILE.yaml", ""]
    for f in fields(config):
        value = getattr(config, f.name)
        if "help" in f.metadata:
            lines.append(f"# {f.metadata['help']}")
        if is_dataclass(value):
            lines.append(f"{f.name}:")
            docs = _attribute_docs(type(value))
            plain = to_plain(value)
            for name, sub_value in plain.items():
                sub = value.__dataclass_fields__.get(name)
                help_text = sub.metadata.get("help") if sub else None
                if help_text or name in docs:
                    lines.append(f"  # {(help_text or docs[name]).replace('``', '')}")
                dumped = yaml.safe_dump({name: sub_value}, sort_keys=False, allow_unicode=True)
                lines.extend("  " + line for line in dumped.rstrip().splitlines())
        else:
            dumped = yaml.safe_dump({f.name: to_plain(value)}, sort_keys=False, allow_unicode=True)
            lines.extend(dumped.rstrip().splitlines())
        lines.append("")
    return "\n".join(lines)


def _attribute_docs(cls: type) -> dict[str, str]:
    """Field descriptions from a Google-style ``Attributes:`` docstring section."""
    docs: dict[str, str] = {}
    in_section, current = False, None
    for line in (cls.__doc__ or "").splitlines():
        stripped = line.strip()
        if stripped == "Attributes:":
            in_section = True
            continue
        if not in_section:
            continue
        if not stripped:
            break
        name, sep, text = stripped.partition(": ")
        if sep and name.isidentifier():
            current = name
            docs[name] = text
        elif current:
            docs[current] += " " + stripped
    return docs
