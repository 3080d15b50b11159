"""RunConfig: one file that fully describes a run, shared by the UI, the CLI and the worker.

Each knob is one documented dataclass field declared with :func:`engine.fields.knob`: its
help text, allowed range and choices are written once there, shown by the Train form and written
as comments by ``python -m engine export-config``, and enforced by ``check_fields`` in
``__post_init__``, which raises :class:`ConfigError` naming the dotted field, what was wrong and
what is allowed. ``__post_init__`` adds only the checks that span several fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.config.algorithms import GRPOSettings, PPOSettings, RLOOSettings
from engine.config.tools import ToolSettings
from engine.config.training import TrainingSettings
from engine.data.datasets import DataSpec
from engine.fields import (
    ConfigError,
    check_fields,
    field_help,
    from_dict,
    knob,
    parse_yaml,
    to_dict,
    to_plain,
)
from engine.generation.backend import check_available
from engine.generation.settings import sampling_knob
from engine.models.specs import ModelSpec
from rewards.spec import DEFAULT_PRESET, RewardSpec, preset
from storage.shown_text import hidden_character

ALGORITHMS = ("grpo", "rloo", "ppo")
GENERATION_BACKENDS = ("auto", "hf", "compiled", "vllm")


@dataclass
class GenerationSettings:
    """How completions are sampled during training."""

    num_generations: int = knob(
        8, help="Completions sampled per prompt (the group size).", lo=2, hi=64
    )
    # The sampling knobs are SamplingSettings' (one range, one help), under the config's names.
    max_completion_length: int = sampling_knob("max_new_tokens", 96)
    # Training draws: not greedy (a group of identical completions has nothing to learn from).
    temperature: float = sampling_knob(
        "temperature",
        0.8,
        help="Sampling temperature; above 0, as training draws (0 is greedy).",
        lo_open=True,
    )
    top_p: float = sampling_knob("top_p", 1.0)
    backend: str = knob(
        "auto",
        help=(
            "Sampler during training: auto (compiled, on every device), hf (transformers' "
            "generate), compiled (static KV cache, CUDA-graph decode), vllm (TRL's colocated "
            "vLLM; needs the vllm package)."
        ),
        choices=GENERATION_BACKENDS,
    )

    def __post_init__(self) -> None:
        check_fields(self, "generation")
        check_available(self.backend)


@dataclass
class RunConfig:
    """Everything a run needs: model, data, reward, algorithm and its hyperparameters."""

    name: str = knob("", help="A label shown in the dashboard.")
    algorithm: str = knob(
        "grpo", help=f"The training algorithm: {', '.join(ALGORITHMS)}.", choices=ALGORITHMS
    )
    model: ModelSpec = field(default_factory=ModelSpec)
    data: DataSpec = field(default_factory=DataSpec)
    reward: RewardSpec = field(default_factory=lambda: preset(DEFAULT_PRESET))
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    grpo: GRPOSettings = field(default_factory=GRPOSettings)
    rloo: RLOOSettings = field(default_factory=RLOOSettings)
    ppo: PPOSettings = field(default_factory=PPOSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)

    def __post_init__(self) -> None:
        check_fields(self, "")
        if len(self.name) > 200:
            raise ConfigError("name", f"must be at most 200 characters, got {len(self.name)}")
        if hidden := hidden_character(self.name):  # pages and model cards show it
            raise ConfigError("name", f"holds {hidden}; a name is one line of plain text")
        self._check_batch_rule()
        if self.training.distributed == "fsdp" and self.model.load_in_4bit:
            raise ConfigError(
                "training.distributed",
                "fsdp cannot shard 4-bit weights; turn model.load_in_4bit off or use ddp",
            )
        if self.training.distributed == "fsdp" and self.algorithm == "ppo":
            # PPO's sampler, reference model and checkpoints read the policy's weights outside
            # its forward, where FSDP holds only this rank's shard of them.
            raise ConfigError(
                "training.distributed",
                "fsdp is not available for ppo yet; use ddp, or grpo/rloo with fsdp",
            )
        if self.algorithm == "ppo":
            self.ppo.check_batch(self.completions_per_step // self.training.processes)
        if self.tools.enabled and self.algorithm != "grpo":
            # TRL 1.16's RLOOTrainer takes no tools; our PPO samples one turn (a multi-turn
            # rollout there is a later phase of issue 24).
            raise ConfigError(
                "tools.builtin" if self.tools.builtin else "tools.python_module",
                f"{self.algorithm} cannot call tools; tools run with grpo only (empty the list "
                "or choose grpo)",
            )
        if self.grpo.world_model_coeff and not self.tools.enabled:
            # The loss reads the tool-result tokens; a run without tools has none.
            raise ConfigError(
                "grpo.world_model_coeff",
                "the world-model loss trains on tool results; enable tools (tools.builtin) or "
                "set it to 0",
            )
        if self.training.rollout == "async":
            self._check_async_rollout()
        if self.algorithm != "grpo" and self.reward.aggregation != "sum_then_normalize":
            # RLOOConfig 1.16 has no multi_objective_aggregation; our PPO rewards the total.
            raise ConfigError(
                "reward.aggregation",
                f"{self.algorithm} sums the weighted components (sum_then_normalize only); "
                "normalize_then_sum is a GRPO setting",
            )

    def _check_async_rollout(self) -> None:
        # The worker samples the next step with our sampler, one turn, while this one trains
        # on one GPU; the importance weights assume one update between sampling and training.
        reason = None
        if self.algorithm == "ppo":
            reason = "ppo samples and trains in one step of its own (use grpo or rloo)"
        elif self.tools.enabled:
            reason = "tool rollouts take several turns per step (turn tools off)"
        elif self.generation.backend in ("hf", "vllm"):
            reason = f"generation.backend {self.generation.backend} samples in the step itself"
        elif self.training.processes > 1:
            reason = "it runs on one GPU (set num_gpus and num_machines to 1)"
        elif getattr(self, self.algorithm).num_iterations > 1:
            reason = f"{self.algorithm}.num_iterations must be 1 (one update per batch)"
        if reason:
            raise ConfigError("training.rollout", f"async is not available here: {reason}")

    @property
    def completions_per_step(self) -> int:
        return self.training.prompts_per_step * self.generation.num_generations

    def per_device_batch_size(self) -> int:
        """Completions per device per forward pass (TRL's ``per_device_train_batch_size``)."""
        per_device = self.completions_per_step // self.training.processes
        return min(per_device, self.training.micro_batch_size or per_device)

    def gradient_accumulation_steps(self) -> int:
        per_device = self.completions_per_step // self.training.processes
        return per_device // self.per_device_batch_size()

    def _check_batch_rule(self) -> None:
        # TRL: per_device_train_batch_size * processes * steps_per_generation must hold whole
        # prompt groups. We size the step as prompts_per_step * num_generations completions and
        # split it evenly over the GPUs of every machine and micro-batches, so both splits must
        # be exact.
        t = self.training
        total, gpus = self.completions_per_step, t.processes
        p, g = t.prompts_per_step, self.generation.num_generations
        if total % gpus:
            machines = f" ({t.num_gpus} on each of {t.num_machines} machines)"
            raise ConfigError(
                "training.num_gpus" if t.num_machines == 1 else "training.num_machines",
                f"each step's {p} prompts x {g} generations = {total} completions must split "
                f"evenly over {gpus} GPUs{machines if t.num_machines > 1 else ''}; choose "
                f"prompts_per_step so that {total} is a multiple of {gpus}",
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
        return cls.from_yaml(cls.read_text(path))

    @staticmethod
    def read_text(path: str | Path) -> str:
        """The text of config file ``path``; a ``ConfigError`` says what is wrong with it."""
        path = Path(path)
        if path.is_dir():
            raise ConfigError("", f"{path} is a folder; give the run config file (YAML)")
        if not path.is_file():
            raise ConfigError("", f"config file {path} does not exist")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ConfigError("", f"config file {path} is not UTF-8 text (YAML)") from None


def documented_yaml(config: RunConfig | None = None, sources: dict[str, str] | None = None) -> str:
    """The config as YAML, each field preceded by its help text as a comment, and by where its
    value comes from when ``sources`` (dotted path -> text) names it."""
    config = config or RunConfig()
    sources = sources or {}
    lines = ["# Reward Studio run config. Run it with: python -m engine train THIS_FILE.yaml", ""]
    for f in fields(config):
        value = getattr(config, f.name)
        if "help" in f.metadata:
            lines.append(f"# {field_help(f)}")
        if is_dataclass(value):
            lines.append(f"{f.name}:")
            docs = _attribute_docs(type(value))
            plain = to_plain(value)
            for name, sub_value in plain.items():
                sub = value.__dataclass_fields__.get(name)
                help_text = field_help(sub) if sub else None
                if help_text or name in docs:
                    lines.append(f"  # {(help_text or docs[name]).replace('``', '')}")
                if f"{f.name}.{name}" in sources:
                    lines.append(f"  # suggested: {sources[f'{f.name}.{name}']}")
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
