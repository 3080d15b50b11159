"""The files of a data dir's run folders, named once for the launcher, worker, trainers, CLI and UI.

::

    <data dir>/studio.db                 the database (:mod:`storage.paths`)
    <data dir>/dispatch.lock             held while queued runs are counted and started
    <data dir>/compile_cache/            compiled kernels every run reuses
                                         (:mod:`engine.runtime.compile_cache`)
    <data dir>/runs/<run id>/            one folder per run (:func:`run_dir`)
        config.yaml                      the worker's copy of the run config, written from the
                                         run's database row each time a worker starts (the row
                                         is the record; nothing else reads this file)
        worker.log                       the worker's stdout and stderr
        devices.json                     the GPUs or CPU cores the run was given
        no-hub-token                     present: the worker gets no Hugging Face token
        accelerate_fsdp.yaml             ``accelerate launch`` settings of an FSDP run
        accelerate_machines.yaml         ``accelerate launch`` settings of a run over several
                                         machines, which every machine launches from
                                         (:mod:`engine.run.machines`)
        .saving/checkpoint-<step>/       a checkpoint being written
        checkpoint-<step>/               a published checkpoint, complete once it holds
                                         trainer_state.json (written last)
            policy/                      a PPO checkpoint's policy (TRL's hold it at the top)
        final/                           the model of a completed run: full weights, or a
                                         LoRA run's adapter + base_model.json
        trackio/                         trackio's local logs (``training.report_to: [trackio]``)

This module imports nothing heavy, so listing or stopping runs never loads torch.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_FILE = "config.yaml"
WORKER_LOG = "worker.log"
DEVICES_FILE = "devices.json"
# Its presence withholds HF_TOKEN from the run's worker (a visitor's run on a public app).
NO_HUB_TOKEN_MARKER = "no-hub-token"
FSDP_CONFIG_FILE = "accelerate_fsdp.yaml"
MACHINES_CONFIG_FILE = "accelerate_machines.yaml"
CHECKPOINT_PREFIX = "checkpoint-"
STAGING_DIR = ".saving"
# Written last into every checkpoint: by transformers' Trainer, and by our PPO.
COMPLETE_MARKER = "trainer_state.json"
FINAL_DIR = "final"
# In a PPO checkpoint: the policy's weights (or LoRA adapter) and tokenizer.
POLICY_DIR = "policy"
TRACKIO_DIR = "trackio"
# In the data dir: held while counting running runs and starting queued ones.
DISPATCH_LOCK = "dispatch.lock"


def run_dir(data_dir: str | os.PathLike[str], run_id: str) -> Path:
    """The folder of run ``run_id`` in ``data_dir``."""
    from storage.paths import runs_dir  # the storage package loads SQLAlchemy; devices.py does not

    return runs_dir(data_dir) / run_id


def config_path(folder: Path) -> Path:
    """The worker's copy of the run config inside the run folder ``folder``."""
    return folder / CONFIG_FILE


def machines_config_path(folder: Path) -> Path:
    """The accelerate config file every machine of a multi-machine run launches from."""
    return folder / MACHINES_CONFIG_FILE


def final_model_dir(folder: Path) -> Path:
    """Where a completed run's model is saved."""
    return folder / FINAL_DIR


def checkpoint_dir(folder: Path, step: int) -> Path:
    """The published checkpoint of ``step``."""
    return folder / f"{CHECKPOINT_PREFIX}{step}"


def trackio_dir(folder: Path) -> Path:
    """Where trackio logs a run of the run folder ``folder`` (its local database, never a Space)."""
    return folder / TRACKIO_DIR


def staging_dir(folder: Path) -> Path:
    """Where checkpoints of the run folder ``folder`` are written before they are published."""
    return folder / STAGING_DIR


def staged_checkpoint_dir(folder: Path, step: int) -> Path:
    """Where the checkpoint of ``step`` is written before it is published."""
    return staging_dir(folder) / f"{CHECKPOINT_PREFIX}{step}"
