"""PPO checkpoints on disk: ``checkpoint-<step>/`` with everything a run needs to continue.

Layout::

    checkpoint-<step>/
        policy/               the policy: full weights that load with from_pretrained, or the
                              LoRA adapter (adapter_model.safetensors), plus the tokenizer
        critic.safetensors    the value head (and the separate value model, if any)
        optimizer.pt          AdamW state of policy and critic
        scheduler.pt          learning-rate schedule
        trainer_state.json    step, current KL coefficient, reward statistics, tokens seen
        rng_state.pt          Python, NumPy and torch RNG states
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from engine.models import save_plain_weights
from engine.worker import CHECKPOINT_PREFIX

logger = logging.getLogger(__name__)

POLICY_DIR = "policy"
ADAPTER_FILE = "adapter_model.safetensors"
CRITIC_FILE = "critic.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
SCHEDULER_FILE = "scheduler.pt"
STATE_FILE = "trainer_state.json"
RNG_FILE = "rng_state.pt"


def is_peft_model(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def write_checkpoint(
    path: Path,
    *,
    policy: Any,
    tokenizer: Any,
    critic: dict[str, torch.Tensor],
    optimizer: Any,
    scheduler: Any,
    state: dict[str, Any],
) -> None:
    """Write every part of a checkpoint into ``path`` (see the module docstring)."""
    path.mkdir(parents=True, exist_ok=True)
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
    (path / STATE_FILE).write_text(json.dumps(state, indent=2), encoding="utf-8")
    rng = {"python": random.getstate(), "numpy": np.random.get_state()}
    rng["torch"] = torch.get_rng_state()
    torch.save(rng, path / RNG_FILE)


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
    optimizer.load_state_dict(torch.load(path / OPTIMIZER_FILE, weights_only=False))
    scheduler.load_state_dict(torch.load(path / SCHEDULER_FILE, weights_only=False))
    rng = torch.load(path / RNG_FILE, weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
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


def rotate_checkpoints(run_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints of a run; returns the deleted folders."""
    numbered = {
        p: int(p.name.removeprefix(CHECKPOINT_PREFIX))
        for p in run_dir.glob(f"{CHECKPOINT_PREFIX}*")
        if p.name.removeprefix(CHECKPOINT_PREFIX).isdigit()
    }
    old = sorted(numbered, key=numbered.get)[:-keep]
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    return old
