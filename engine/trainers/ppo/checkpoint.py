"""PPO checkpoints on disk: ``checkpoint-<step>/`` with everything a run needs to continue.

Written aside and published by one rename (see :mod:`engine.runtime.checkpoints`);
``trainer_state.json`` is written last, the mark of a complete folder. Everything loads with
``torch.load(weights_only=True)``: plain tensors, numbers and containers, never pickled objects.

Layout::

    checkpoint-<step>/
        policy/               the policy: full weights that load with from_pretrained, or the
                              LoRA adapter (adapter_model.safetensors), plus the tokenizer
        critic.safetensors    the value head (and the separate value model, if any)
        optimizer.pt          AdamW state of policy and critic
        scheduler.pt          learning-rate schedule
        trainer_state.json    step, current KL coefficient, reward statistics, tokens seen
        rng_state.pt          Python, NumPy and torch RNG states (NumPy's as a tensor)
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from engine.models.saving import save_plain_weights
from engine.runtime.checkpoints import publish
from engine.runtime.checkpoints import rotate_checkpoints as rotate_checkpoints  # PPO's import path
from engine.runtime.layout import COMPLETE_MARKER, POLICY_DIR, staged_checkpoint_dir

logger = logging.getLogger(__name__)

ADAPTER_FILE = "adapter_model.safetensors"
CRITIC_FILE = "critic.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
SCHEDULER_FILE = "scheduler.pt"
STATE_FILE = COMPLETE_MARKER
RNG_FILE = "rng_state.pt"


def is_peft_model(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def write_checkpoint(
    run_dir: Path,
    step: int,
    *,
    policy: Any,
    tokenizer: Any,
    critic: dict[str, torch.Tensor],
    optimizer: Any,
    scheduler: Any,
    state: dict[str, Any],
    before_publish: Callable[[], None] | None = None,
) -> Path:
    """Write ``run_dir/checkpoint-<step>/`` (see the module docstring) and return it.

    The folder is written under the run's staging folder and renamed into place only when
    complete, after ``before_publish`` (the worker commits the step's metrics there).
    """
    path = staged_checkpoint_dir(run_dir, step)
    shutil.rmtree(path, ignore_errors=True)  # left by an earlier attempt at this step
    path.mkdir(parents=True)
    if is_peft_model(policy):
        policy.save_pretrained(path / POLICY_DIR)
        tokenizer.save_pretrained(path / POLICY_DIR)
    else:
        save_plain_weights(policy, tokenizer, path / POLICY_DIR)
    save_file(
        {k: v.detach().cpu().contiguous() for k, v in critic.items()}, str(path / CRITIC_FILE)
    )
    torch.save(optimizer.state_dict(), path / OPTIMIZER_FILE)
    torch.save(scheduler.state_dict(), path / SCHEDULER_FILE)
    torch.save(_rng_state(), path / RNG_FILE)
    (path / STATE_FILE).write_text(json.dumps(state, indent=2), encoding="utf-8")
    return publish(path, before_publish)


def _rng_state() -> dict[str, Any]:
    """Python, NumPy and torch RNG states as tensors, numbers and tuples (weights_only-safe)."""
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached_gaussian),
        "torch": torch.get_rng_state(),
    }


def _restore_rng(rng: dict[str, Any]) -> None:
    name, keys, pos, has_gauss, cached_gaussian = rng["numpy"]
    random.setstate(rng["python"])
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached_gaussian))
    torch.set_rng_state(rng["torch"])


def read_checkpoint(
    path: Path, *, policy: Any, critic: Any, optimizer: Any, scheduler: Any
) -> dict[str, Any]:
    """Load a checkpoint's weights, optimizer, schedule and RNG in place; returns its state."""
    policy_dir = path / POLICY_DIR
    if is_peft_model(policy):
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(policy, load_file(str(policy_dir / ADAPTER_FILE)))
    else:
        load_full_weights(policy, policy_dir)
    critic.load_critic_state_dict(load_file(str(path / CRITIC_FILE)))
    optimizer.load_state_dict(torch.load(path / OPTIMIZER_FILE, weights_only=True))
    scheduler.load_state_dict(torch.load(path / SCHEDULER_FILE, weights_only=True))
    _restore_rng(torch.load(path / RNG_FILE, weights_only=True))
    return json.loads((path / STATE_FILE).read_text(encoding="utf-8"))


def load_full_weights(model: torch.nn.Module, folder: Path) -> None:
    """Load ``folder``'s ``*.safetensors`` shards into ``model``; tied copies may be missing."""
    state: dict[str, torch.Tensor] = {}
    for shard in sorted(folder.glob("*.safetensors")):
        state.update(load_file(str(shard)))
    if not state:
        raise FileNotFoundError(f"no *.safetensors weights in {folder}")
    missing, unexpected = model.load_state_dict(state, strict=False)
    params = model.state_dict()
    loaded = {params[k].data_ptr() for k in state if k in params}
    untied = [k for k in missing if params[k].data_ptr() not in loaded]
    if unexpected or untied:
        raise RuntimeError(
            f"checkpoint {folder} does not match the model: missing {untied[:5]}, "
            f"unexpected {list(unexpected)[:5]}"
        )
