"""Sharing a machine: GPUs per run, CPU core shares, the preview's threads, FSDP launch files."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.run.distributed import FSDP_CONFIG_FILE
from engine.run.launcher import CONFIG_FILE, run_command
from engine.run.preflight import check_inputs
from engine.runtime.devices import (
    Assignment,
    Gpu,
    bounded_threads,
    core_share,
    parse_nvidia_smi,
    pick_gpus,
    preview_threads,
)

GIB = 1024**3
NVIDIA_SMI = "0, 81000, 81559\n1, 20000, 81559\n2, 79000, 81559\n"  # index, free, total (MiB)


def test_nvidia_smi_output_is_read_in_bytes():
    gpus = parse_nvidia_smi(NVIDIA_SMI + "garbage line\n")
    assert gpus[1] == Gpu(1, 20000 * 2**20, 81559 * 2**20)
    assert [g.index for g in gpus] == [0, 1, 2]


def test_a_run_gets_the_free_gpus_with_most_free_memory_or_waits():
    gpus = parse_nvidia_smi(NVIDIA_SMI)
    assert pick_gpus(gpus, taken=[], count=1, wanted=[]) == [0]
    assert pick_gpus(gpus, taken=[0], count=1, wanted=[]) == [2]  # 1 is busier
    assert pick_gpus(gpus, taken=[], count=2, wanted=[]) == [0, 2]
    assert pick_gpus(gpus, taken=[0, 2], count=2, wanted=[]) == []  # only one left: wait
    assert pick_gpus(gpus, taken=[0], count=1, wanted=[1]) == [1]
    assert pick_gpus(gpus, taken=[1], count=1, wanted=[1]) == []  # the named GPU is taken


def test_core_shares_are_disjoint_blocks():
    cores = [0, 1, 2, 3]
    assert core_share(cores, slots=1, taken=[]) == []  # alone: every core, no pinning
    assert core_share(cores, slots=2, taken=[]) == [0, 1]
    assert core_share(cores, slots=2, taken=[0, 1]) == [2, 3]
    assert core_share(cores, slots=2, taken=[0, 1, 2, 3]) == []
    assert core_share([0, 1], slots=3, taken=[]) == []  # fewer cores than slots


def test_assignment_env_and_file(tmp_path):
    a = Assignment(gpu_ids=[2], cpu_cores=[])
    assert a.env() == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "2"}
    cpu = Assignment(cpu_cores=[1])
    assert cpu.env() == {"STUDIO_CPU_CORES": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cpu.save(tmp_path)
    assert Assignment.load(tmp_path) == cpu
    (tmp_path / "devices.json").write_text("{not json")
    assert Assignment.load(tmp_path) == Assignment()


def test_a_worker_pins_itself_to_its_share_of_the_cores():
    cores = sorted(os.sched_getaffinity(0))
    code = (
        "import os, torch; from engine.runtime.devices import apply_cpu_share; apply_cpu_share(); "
        "print(torch.get_num_threads(), sorted(os.sched_getaffinity(0)))"
    )
    env = {**os.environ, **Assignment(cpu_cores=cores[-1:]).env()}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", f"[{cores[-1]}]"]


def test_the_preview_uses_the_cores_no_worker_holds():
    cores = len(os.sched_getaffinity(0))
    assert preview_threads(running_workers=0, slots=1) == cores
    assert preview_threads(running_workers=1, slots=1) == 1
    before = torch.get_num_threads()
    with bounded_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_gpu_ids_and_distributed_are_validated():
    def error(**training) -> str:
        with pytest.raises(ConfigError) as err:
            RunConfig.from_dict({"training": training})
        return f"{err.value.field}: {err.value}"

    assert RunConfig.from_dict({"training": {"gpu_ids": " 3 "}}).training.gpu_list == [3]
    assert "must be GPU numbers" in error(gpu_ids="0;1")
    assert "lists a GPU twice" in error(gpu_ids="1,1", num_gpus=2)
    assert "names 2 GPUs for num_gpus 1" in error(gpu_ids="0,1")
    assert error(distributed="fsdp").startswith("training.distributed")
    assert "one of ddp, fsdp" in error(distributed="zero3")
    with pytest.raises(ConfigError, match="fsdp cannot shard 4-bit"):
        RunConfig.from_dict(
            {"model": {"load_in_4bit": True}, "training": {"num_gpus": 2, "distributed": "fsdp"}}
        )
    with pytest.raises(ConfigError, match="fsdp is not available for ppo yet; use ddp"):
        RunConfig.from_dict(
            {"algorithm": "ppo", "training": {"num_gpus": 2, "distributed": "fsdp"}}
        )
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="GPU 0 is not on this machine, which has no GPU"):
            check_inputs(RunConfig.from_dict({"training": {"gpu_ids": "0"}}))


def test_fsdp_runs_launch_with_a_generated_accelerate_config(tmp_path):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    config = RunConfig.from_dict({"training": {"num_gpus": 2, "distributed": "fsdp"}})
    config.save(tmp_path / CONFIG_FILE)
    cmd = run_command(config, tmp_path, "grpo-1", tmp_path / "data")
    path = tmp_path / FSDP_CONFIG_FILE
    assert cmd[1:5] == ["-m", "accelerate.commands.launch", "--config_file", str(path)]
    settings = load_config_from_file(str(path))  # accelerate's own reader
    assert settings.distributed_type == "FSDP" and settings.num_processes == 2
    fsdp = settings.fsdp_config
    assert fsdp["fsdp_sharding_strategy"] == "FULL_SHARD"
    assert fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    assert fsdp["fsdp_transformer_layer_cls_to_wrap"] == "LlamaDecoderLayer"  # default model
    # accelerate merges the file into its launch arguments as `accelerate launch` would.
    args = launch_command_parser().parse_args(cmd[3:])
    args, *_ = _validate_launch_command(args)
    assert args.use_fsdp and args.num_processes == 2
    assert args.training_script == "engine" and args.module
    ddp = RunConfig.from_dict({"training": {"num_gpus": 2}})
    assert "--config_file" not in run_command(ddp, tmp_path, "grpo-2", tmp_path)
