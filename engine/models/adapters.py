"""A saved LoRA adapter and the pointer to its base: what a LoRA run keeps as its final model.

The field's convention (PEFT ``PeftModel.save_pretrained``, TRL's trainers) is to save the
adapter alone and merge it into its base on export: ``adapter_model.safetensors`` and
``adapter_config.json`` are tens of MB where the merged weights of an 8B model are 16 GB, and
saving them needs no copy of the model. Beside them, ``base_model.json`` says which base the
adapter belongs to as the run named it (an alias such as ``default`` resolves on any install,
where PEFT's ``base_model_name_or_path`` holds this machine's path), the GGUF file inside it if
any, and the base's Hub revision (commit hash) where it was loaded from the Hub.

A folder like this loads anywhere a model folder does (:func:`engine.models.loading.
load_model_and_tokenizer`, with :func:`attach_adapter`): its base is loaded and the adapter
merged into it (peft
``merge_and_unload``, Hu et al. 2021 §4.1: ``W = W0 + BA`` adds no inference latency).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.models.specs import ModelSpec

logger = logging.getLogger(__name__)

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
BASE_POINTER = "base_model.json"


@dataclass(frozen=True)
class BasePointer:
    """Which base model an adapter folder belongs to.

    Attributes:
        name_or_path: the base as the run named it (alias, Hub id or folder).
        gguf_file: the GGUF file inside ``name_or_path``, if the base is one.
        loaded_from: where it was loaded from on the machine that trained it.
        revision: the Hub commit hash of the base, where it came from the Hub (else None).
        config_sha256: SHA-256 of the base folder's ``config.json``, where it is a folder.
    """

    name_or_path: str
    gguf_file: str | None = None
    loaded_from: str = ""
    revision: str | None = None
    config_sha256: str | None = None

    def spec(self, dtype: str = "auto") -> ModelSpec:
        """The base as a model spec (no LoRA: the adapter is this folder's)."""
        return ModelSpec(self.name_or_path, dtype=dtype, gguf_file=self.gguf_file)


def is_peft_model(model: Any) -> bool:
    """True for a peft ``PeftModel`` (a model with an adapter attached)."""
    return hasattr(model, "peft_config") and hasattr(model, "merge_and_unload")


def is_adapter_folder(folder: str | Path) -> bool:
    """True when ``folder`` holds a PEFT adapter (``adapter_config.json``)."""
    return (Path(folder).expanduser() / ADAPTER_CONFIG).is_file()


def base_pointer(base: ModelSpec, model: Any) -> BasePointer:
    """The pointer to ``base`` (the run's model spec) of the loaded ``model``, whose config
    names where the base was loaded from (:func:`engine.models.loading.load_model_and_tokenizer`
    sets it)."""
    config = (model.get_base_model() if is_peft_model(model) else model).config
    loaded_from = str(getattr(config, "_name_or_path", "") or base.name_or_path)
    config_file = Path(loaded_from).expanduser() / "config.json"
    digest = None
    if config_file.is_file():
        digest = hashlib.sha256(config_file.read_bytes()).hexdigest()
    return BasePointer(
        name_or_path=base.name_or_path,
        gguf_file=base.gguf_file,
        loaded_from=loaded_from,
        revision=getattr(config, "_commit_hash", None),
        config_sha256=digest,
    )


def save_adapter(
    model: Any,
    tokenizer: Any,
    out: str | Path,
    base: ModelSpec,
    state_dict: dict[str, Any] | None = None,
) -> Path:
    """Write ``model``'s adapter (a ``PeftModel``), its tokenizer and ``base_model.json`` to
    ``out``. ``state_dict``: the full state dict where only the caller holds it (FSDP gathers
    it on the main process); PEFT picks the adapter's weights out of it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kwargs = {} if state_dict is None else {"state_dict": state_dict}
    model.save_pretrained(out, **kwargs)  # adapter_model.safetensors + adapter_config.json
    tokenizer.save_pretrained(out)
    pointer = base_pointer(base, model)
    (out / BASE_POINTER).write_text(json.dumps(asdict(pointer), indent=2), encoding="utf-8")
    return out


def read_base_pointer(folder: str | Path) -> BasePointer:
    """The base of the adapter in ``folder``: its ``base_model.json``, else (a checkpoint, or an
    adapter saved by another tool) PEFT's ``base_model_name_or_path``. Raises ``ValueError``
    when neither names one."""
    folder = Path(folder).expanduser()
    pointer = folder / BASE_POINTER
    if pointer.is_file():
        data = json.loads(pointer.read_text(encoding="utf-8"))
        known = BasePointer.__dataclass_fields__
        return BasePointer(**{k: v for k, v in data.items() if k in known})
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    name = config.get("base_model_name_or_path")
    if not name:
        raise ValueError(
            f"adapter {folder}: neither {BASE_POINTER} nor {ADAPTER_CONFIG}'s "
            "base_model_name_or_path names its base model"
        )
    return BasePointer(name_or_path=name, loaded_from=name)


def check_revision(pointer: BasePointer, base_model: Any) -> None:
    """Warn when the base loaded now is not the revision the adapter was trained on."""
    now = getattr(base_model.config, "_commit_hash", None)
    if pointer.revision and now and now != pointer.revision:
        logger.warning(
            "the adapter was trained on %s at revision %s; the base loaded now is at %s",
            pointer.name_or_path,
            pointer.revision,
            now,
        )


def attach_adapter(base_model: Any, folder: str | Path, *, merge: bool = True) -> Any:
    """``base_model`` with the adapter of ``folder``: merged into its weights (a plain model, as
    exports write it) or, with ``merge=False``, attached (a ``PeftModel``)."""
    from peft import PeftModel

    model = PeftModel.from_pretrained(base_model, str(Path(folder).expanduser()))
    return model.merge_and_unload() if merge else model
