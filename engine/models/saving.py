"""Writing a loaded model as a plain safetensors folder that reloads anywhere."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def save_plain_weights(model: Any, tokenizer: Any, out_dir: str | Path) -> Path:
    """Save ``model`` and ``tokenizer`` as a plain safetensors folder that reloads anywhere.

    ``save_pretrained`` refuses models loaded from GGUF (their config still names the GGUF
    source); this writes the in-memory weights with a clean config instead. A PEFT model is merged
    into a copy of itself first so the folder holds full weights (a LoRA run's final model is its
    adapter instead, :mod:`engine.models.adapters`). Works for every other model too.
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
