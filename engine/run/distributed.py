"""How a several-GPU run is launched: ``accelerate launch`` with DDP, or FSDP from a config file.

DDP keeps a full copy of the model, its gradients and AdamW moments on every GPU. FSDP
(Zhao et al. 2023, "PyTorch FSDP"; accelerate's ``FullyShardedDataParallelPlugin``) shards all
three over the GPUs (``FULL_SHARD``, ZeRO stage 3 in Rajbhandari et al. 2020), wrapping each
transformer layer as one unit (``TRANSFORMER_BASED_WRAP`` on the model's ``_no_split_modules``
class), so a full fine-tune that does not fit one card fits several. The FSDP settings are
written to ``accelerate_fsdp.yaml`` in the run folder, where the user can read and re-use them
with ``accelerate launch --config_file``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

from engine.models.adapters import is_peft_model, save_adapter
from engine.models.loading import meta_model
from engine.models.saving import save_plain_weights
from engine.models.specs import ModelSpec
from engine.runtime.layout import FSDP_CONFIG_FILE

logger = logging.getLogger(__name__)


def layer_class(model_name_or_path: str, gguf_file: str | None = None) -> str | None:
    """The transformer layer class FSDP wraps (e.g. ``Qwen2DecoderLayer``), read from the
    model's config on the meta device; None when unknown (accelerate then reads the loaded
    model's ``_no_split_modules`` itself)."""
    try:
        classes = getattr(meta_model(model_name_or_path, gguf_file), "_no_split_modules", None)
    except (OSError, ValueError, ImportError):
        return None
    return ",".join(classes) if classes else None


def fsdp_settings(num_processes: int, layer_cls: str | None) -> dict[str, Any]:
    """accelerate's config-file layout (as ``accelerate config`` writes it) for FSDP."""
    fsdp: dict[str, Any] = {
        "fsdp_version": 1,
        "fsdp_sharding_strategy": "FULL_SHARD",
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_backward_prefetch": "BACKWARD_PRE",
        "fsdp_forward_prefetch": False,
        "fsdp_offload_params": False,
        # Every rank loads the weights itself (onto the CPU) before FSDP shards them.
        "fsdp_cpu_ram_efficient_loading": False,
        "fsdp_sync_module_states": False,
        "fsdp_use_orig_params": True,  # LoRA mixes frozen and trainable weights in one unit
        "fsdp_state_dict_type": "FULL_STATE_DICT",  # checkpoints reload on any GPU count
        "fsdp_activation_checkpointing": False,
    }
    if layer_cls:
        fsdp["fsdp_transformer_layer_cls_to_wrap"] = layer_cls
    return {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "FSDP",
        "fsdp_config": fsdp,
        "mixed_precision": "no",  # the trainer sets bf16 itself where the GPU supports it
        "num_machines": 1,
        "num_processes": num_processes,
        "machine_rank": 0,
        "main_training_function": "main",
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
        "downcast_bf16": "no",
    }


def write_fsdp_config(run_dir: Path, num_processes: int, layer_cls: str | None) -> Path:
    """Write the run's FSDP config file; returns its path."""
    path = run_dir / FSDP_CONFIG_FILE
    text = yaml.safe_dump(fsdp_settings(num_processes, layer_cls), sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def worker_args(config_path: Path, run_id: str, data_dir: Path) -> list[str]:
    """The worker's own arguments (``-m engine run ...``), after python or ``accelerate launch``."""
    return [
        "-m",
        "engine",
        "run",
        str(config_path),
        "--run-id",
        run_id,
        "--data-dir",
        str(data_dir),
    ]


def launch_args(num_processes: int, fsdp_config: Path | None = None) -> list[str]:
    """The ``accelerate launch`` options before the worker's own arguments."""
    if fsdp_config is not None:
        return ["--config_file", str(fsdp_config), "--num_processes", str(num_processes)]
    return [
        "--num_processes",
        str(num_processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",  # the trainer sets bf16 itself where the GPU supports it
        "--dynamo_backend",
        "no",
    ]


def save_final_model(
    accelerator: Any, model: Any, tokenizer: Any, out: Path, base: ModelSpec
) -> None:
    """Save the trained ``model`` (as the accelerator prepared it) to ``out``; every process
    calls this. ``base``: the run's model spec, which a LoRA adapter's ``base_model.json``
    points to.

    A LoRA run writes its adapter alone (:func:`engine.models.adapters.save_adapter`: tens of
    MB, no copy of the model; exports merge it); a full fine-tune its weights
    (:func:`engine.models.saving.save_plain_weights`). Under FSDP the full weights exist only
    while all ranks gather them: the state dict comes from accelerate's ``get_state_dict``
    (``FULL_STATE_DICT``, gathered onto the main process's CPU), which every rank must enter,
    and the main process writes it (PEFT picks the adapter's weights out of it). Read on the
    main process alone, a sharded model's ``state_dict`` waits forever for the other ranks'
    all-gather. An error on the main process is raised there after the others are released.
    """
    from accelerate import DistributedType

    state = None
    if accelerator.distributed_type == DistributedType.FSDP:
        state = accelerator.get_state_dict(model)  # collective: every rank takes part
    try:
        if accelerator.is_main_process:
            unwrapped = accelerator.unwrap_model(model)
            if is_peft_model(unwrapped):
                save_adapter(unwrapped, tokenizer, out, base, state_dict=state)
            elif state is not None:
                out.mkdir(parents=True, exist_ok=True)
                unwrapped.save_pretrained(out, state_dict=state)
                tokenizer.save_pretrained(out)
            else:
                save_plain_weights(unwrapped, tokenizer, out)
            logger.info("Saved the final model to %s", out)
    finally:
        accelerator.wait_for_everyone()
