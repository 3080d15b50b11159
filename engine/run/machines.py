"""A run over several machines, through accelerate's multi-machine launch.

``training.num_machines`` > 1 trains on ``num_gpus`` GPUs of each of that many machines. The
machine where the run is started (the CLI's ``train``, or the app's launcher) is machine 0: it
writes ``accelerate_machines.yaml`` into the run folder (``accelerate config``'s layout: DDP or
FSDP as ``training.distributed`` says, ``num_processes`` = every GPU of every machine,
``main_process_ip``/``main_process_port``, ``rdzv_backend: static``) and runs
``accelerate launch --config_file`` it. Each other machine k runs the same launch with
``--machine_rank k`` (:func:`machine_command`); :func:`other_machines_note` tells the operator
those commands, and the app stores it in the run's log so the Runs view shows it.

accelerate hands this to torchrun (``--nnodes``, ``--node_rank`` and the main address and port
as its rendezvous endpoint; accelerate 1.15 reads ``same_network`` from its command line only):
machine 0 hosts the rendezvous store at the main address and port, every machine waits there
until all have joined, and ranks are global, machine k's GPUs taking ranks
``k * num_gpus`` onwards. Only global rank 0 writes the database
(:func:`engine.run.worker.is_main_process`), so no other machine touches storage or starts
queued runs.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from engine.run.distributed import fsdp_settings, worker_args
from engine.runtime.layout import CONFIG_FILE, MACHINES_CONFIG_FILE, machines_config_path
from storage.records.logs import append_logs

if TYPE_CHECKING:
    from engine.config.training import TrainingSettings
    from storage.sqlite.db import Database

#: How the printed commands start: the other machine's own Python, with the same packages.
PYTHON = "python"


def machines_settings(training: TrainingSettings, layer_cls: str | None = None) -> dict[str, Any]:
    """accelerate's config-file layout for a run over ``training.num_machines`` machines, as
    machine 0 launches it (each other machine overrides ``machine_rank`` on its command line).
    ``layer_cls``: the layer class FSDP wraps (:func:`engine.run.distributed.layer_class`)."""
    t = training
    if t.distributed == "fsdp":
        settings = fsdp_settings(t.processes, layer_cls)
    else:
        settings = {
            "compute_environment": "LOCAL_MACHINE",
            "distributed_type": "MULTI_GPU",
            "mixed_precision": "no",  # the trainer sets bf16 itself where the GPU supports it
            "main_training_function": "main",
            "use_cpu": False,
            "downcast_bf16": "no",
        }
    settings.update(
        {
            "num_machines": t.num_machines,
            "num_processes": t.processes,  # all of them; accelerate gives each machine its share
            "machine_rank": 0,
            "main_process_ip": t.main_address,
            "main_process_port": t.main_port,
            # as `accelerate config` writes machines of one network; torchrun's static
            # rendezvous meets at main_process_ip:main_process_port either way
            "same_network": True,
            "rdzv_backend": "static",  # machine 0 hosts the store: no etcd, no c10d agent
            "gpu_ids": "all",  # each machine trains on the GPUs its launch is shown
        }
    )
    return settings


def write_machines_config(
    run_dir: Path, training: TrainingSettings, layer_cls: str | None = None
) -> Path:
    """Write the run's multi-machine accelerate config file; returns its path."""
    path = machines_config_path(run_dir)
    text = yaml.safe_dump(machines_settings(training, layer_cls), sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def machine_command(
    config_file: Path,
    machine_rank: int,
    config_path: Path,
    run_id: str,
    data_dir: Path,
    python: str = PYTHON,
) -> list[str]:
    """The argv machine ``machine_rank`` runs: ``accelerate launch`` from the run's machines
    config file, then the worker (``python -m engine run``) on the run's config file."""
    return [
        python,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(config_file),
        "--machine_rank",
        str(machine_rank),
        *worker_args(config_path, run_id, data_dir),
    ]


def other_machines_note(
    training: TrainingSettings, run_dir: Path, run_id: str, data_dir: Path
) -> list[str]:
    """What the operator does on machines 1 .. num_machines - 1, as lines: each one's command,
    and what it needs there."""
    t = training
    config_file = machines_config_path(run_dir)
    config_path = run_dir / CONFIG_FILE
    gpus = f"{t.num_gpus} GPU{'s' if t.num_gpus > 1 else ''}"
    lines = [
        f"Run {run_id} trains on {t.num_machines} machines x {gpus} ({t.processes} processes). "
        f"Machine 0 (this one) waits at {t.main_address}:{t.main_port} until every other "
        "machine has joined; start each of them with its command:"
    ]
    for rank in range(1, t.num_machines):
        command = machine_command(config_file, rank, config_path, run_id, data_dir)
        lines.append(f"machine {rank}: {shlex.join(command)}")
    lines.append(
        "Each other machine needs the same Reward Studio code and Python packages, this run's "
        f"{CONFIG_FILE} and {MACHINES_CONFIG_FILE} at the paths above (copy {run_dir}, or mount "
        f"the data dir {data_dir} at the same path), the data the config names, and {gpus} "
        f"(CUDA_VISIBLE_DEVICES picks them). Only machine 0 writes metrics, samples and "
        "checkpoints; a resume needs the checkpoints in the run folder on a disk every "
        "machine sees at the same path."
    )
    return lines


def store_note(db: Database, run_id: str, lines: list[str]) -> None:
    """Add ``lines`` to the run's stored log in ``db``, where the Runs view shows them."""
    now = time.time()
    append_logs(db, run_id, [(now, "INFO", f"{__name__}: {line}") for line in lines])
