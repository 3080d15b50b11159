"""A run over several machines on the CPU: its knobs and their errors, the per-device split over
every machine's GPUs, the accelerate config file and the command each machine runs (read back by
accelerate's own launcher code), the note in the run's log, and a worker of rank > 0 that writes
nothing to the database."""

from __future__ import annotations

import shlex
import sys

import pytest
import yaml
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils.launch import prepare_multi_gpu_env

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.models.shape import model_shape
from engine.planning.memory import estimate
from engine.planning.micro_batch import micro_batch_choices
from engine.run.launcher import run_command
from engine.run.machines import other_machines_note, store_note
from engine.runtime.layout import MACHINES_CONFIG_FILE, config_path, run_dir
from storage import runs as run_store
from storage.paths import db_path
from storage.records.logs import logs_since
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from ui.shared.demo_limits import DemoLimits

TWO = {"num_machines": 2, "main_address": "127.0.0.1", "main_port": 29512}


def config(training=None, **sections) -> RunConfig:
    return RunConfig.from_dict({"training": {**TWO, **(training or {})}, **sections})


def refusal(training: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict({"training": training})
    return info.value


def test_one_machine_by_default_and_the_knobs_round_trip():
    t = RunConfig().training
    assert (t.num_machines, t.main_address, t.main_port, t.processes) == (1, "", 29500, 1)
    again = RunConfig.from_yaml(config({"num_gpus": 2}).to_yaml()).training
    assert (again.num_machines, again.main_address, again.main_port) == (2, "127.0.0.1", 29512)
    assert again.processes == 4


@pytest.mark.parametrize(
    ("training", "field", "says"),
    [
        ({"num_machines": 0}, "training.num_machines", "must be in [1, 64], got 0"),
        ({"num_machines": 65}, "training.num_machines", "64"),
        ({"num_machines": 2}, "training.main_address", "needs the host name or IP address"),
        ({**TWO, "main_address": "  "}, "training.main_address", "needs the host name"),
        ({**TWO, "main_address": "10.0.0.5; rm -rf /"}, "training.main_address", "letters"),
        ({**TWO, "main_address": "$(id)"}, "training.main_address", "letters"),
        ({**TWO, "main_address": "--nnodes=9"}, "training.main_address", "letters"),
        ({**TWO, "main_address": "a" * 254}, "training.main_address", "253"),
        ({**TWO, "main_address": 10}, "training.main_address", "must be text"),
        ({**TWO, "main_port": 80}, "training.main_port", "1024"),
        ({**TWO, "main_port": 65536}, "training.main_port", "65535"),
    ],
)
def test_bad_machine_settings_are_refused_by_field(training, field, says):
    error = refusal(training)
    assert error.field == field and says in str(error)


@pytest.mark.parametrize("address", ["10.0.0.5", "node-1.cluster.local", "::1", "fe80::1"])
def test_host_names_and_ip_addresses_are_accepted(address):
    assert config({"main_address": f" {address} "}).training.main_address == address


def test_every_per_device_split_divides_by_the_gpus_of_every_machine(tmp_path):
    # 8 prompts x 8 = 64 completions over 2 machines x 2 GPUs: 16 per device
    c = config({"num_gpus": 2, "prompts_per_step": 8, "micro_batch_size": 8})
    assert c.training.processes == 4
    assert (c.per_device_batch_size(), c.gradient_accumulation_steps()) == (8, 2)
    assert micro_batch_choices(c) == [16, 8, 4, 2, 1]
    # 3 prompts x 2 = 6 completions split over 2 GPUs, not over 2 machines x 2 GPUs
    RunConfig.from_dict({"training": {"num_gpus": 2, "prompts_per_step": 3}, **_gens(2)})
    with pytest.raises(ConfigError) as info:
        config({"num_gpus": 2, "prompts_per_step": 3}, **_gens(2))
    assert info.value.field == "training.num_machines"
    assert "over 4 GPUs (2 on each of 2 machines)" in str(info.value)
    with pytest.raises(ConfigError) as info:  # PPO's minibatches are per device too
        config({"prompts_per_step": 2}, algorithm="ppo", ppo={"num_minibatches": 8}, **_gens(4))
    assert info.value.field == "ppo.num_minibatches" and "holds 4 completions" in str(info.value)
    RunConfig.from_dict(  # one machine: 8 completions per device, enough for 8 minibatches
        {"algorithm": "ppo", "training": {"prompts_per_step": 2}, "ppo": {"num_minibatches": 8}}
        | _gens(4)
    )
    # The estimate of 2 machines x 2 GPUs is the one of 4 GPUs on one machine.
    (tmp_path / "config.json").write_text(
        '{"model_type": "llama", "vocab_size": 100, "hidden_size": 16, '
        '"intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, '
        '"num_key_value_heads": 2}'
    )
    model = {"name_or_path": str(tmp_path), "lora": None}
    for strategy in ("ddp", "fsdp"):
        spread = config({"num_gpus": 2, "distributed": strategy}, model=model)
        one = RunConfig.from_dict(
            {"training": {"num_gpus": 4, "distributed": strategy}, "model": model}
        )
        shape = model_shape(spread.model)
        assert estimate(spread, shape).terms == estimate(one, shape).terms


def _gens(n: int) -> dict:
    return {"generation": {"num_generations": n}}


def test_fsdp_may_shard_over_one_gpu_of_each_of_two_machines():
    assert config({"distributed": "fsdp"}).training.processes == 2
    error = refusal({"distributed": "fsdp"})
    assert error.field == "training.distributed" and "2 or more" in str(error)


def test_a_public_app_refuses_several_machines_and_a_local_one_allows_them():
    public = DemoLimits.from_env({"STUDIO_PUBLIC": "1"})
    with pytest.raises(ConfigError) as info:
        public.within_caps(config())
    assert info.value.field == "training.num_machines"
    assert "own machine only: set it to 1, got 2" in str(info.value)
    assert public.within_caps(RunConfig()).training.num_machines == 1
    assert DemoLimits.from_env({}).within_caps(config()).training.num_machines == 2


def torchrun_args(argv: list[str]):
    """What ``accelerate launch`` makes of ``argv`` (after ``python -m
    accelerate.commands.launch``): its checked arguments, with torchrun's settings filled in."""
    args = launch_command_parser().parse_args(argv)
    args, _, _ = _validate_launch_command(args)
    prepare_multi_gpu_env(args)
    return args


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_machine_zero_launches_from_the_machines_file_and_tells_machine_one_its_command(
    tmp_path, strategy
):
    c = config({"distributed": strategy}, model={"name_or_path": "/no/such/model"})
    folder = run_dir(tmp_path, "grpo-1")
    folder.mkdir(parents=True)
    c.save(config_path(folder))
    command = run_command(c, folder, "grpo-1", tmp_path)
    file = folder / MACHINES_CONFIG_FILE
    settings = yaml.safe_load(file.read_text())
    assert settings["distributed_type"] == {"ddp": "MULTI_GPU", "fsdp": "FSDP"}[strategy]
    assert (settings["num_machines"], settings["machine_rank"], settings["num_processes"]) == (
        2,
        0,
        2,
    )
    assert (settings["main_process_ip"], settings["main_process_port"]) == ("127.0.0.1", 29512)
    assert (settings["rdzv_backend"], settings["same_network"]) == ("static", True)
    assert command[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert command[3:7] == ["--config_file", str(file), "--machine_rank", "0"]

    note = other_machines_note(c.training, folder, "grpo-1", tmp_path)
    assert "2 machines x 1 GPU (2 processes)" in note[0] and "127.0.0.1:29512" in note[0]
    (line,) = [n for n in note if n.startswith("machine ")]
    other = shlex.split(line.removeprefix("machine 1: "))
    assert other == ["python", *command[1:6], "1", *command[7:]]
    assert other[-7:] == ["engine", "run", str(config_path(folder)), "--run-id", "grpo-1",
                          "--data-dir", str(tmp_path)]  # fmt: skip
    assert "same Reward Studio code" in note[-1] and "a disk every machine sees" in note[-1]

    for rank, argv in ((0, command), (1, other)):  # as accelerate itself reads them
        args = torchrun_args(argv[3:])
        assert (args.nnodes, args.node_rank, args.nproc_per_node) == ("2", rank, "1")
        endpoint = args.rdzv_endpoint or f"{args.master_addr}:{args.master_port}"
        assert endpoint == "127.0.0.1:29512" and args.rdzv_backend == "static"
        assert (args.module, args.training_script) == (True, "engine")
        assert args.use_fsdp == (strategy == "fsdp") and args.multi_gpu == (strategy == "ddp")


def test_the_note_lands_in_the_runs_log(tmp_path):
    with Database(db_path(tmp_path)) as db:
        run_store.create_run(db, run_id="grpo-1", algorithm="grpo", config={})
        note = other_machines_note(config().training, tmp_path / "r", "grpo-1", tmp_path)
        store_note(db, "grpo-1", note)
        messages = [line.message for line in logs_since(db, "grpo-1")[0]]
    assert len(messages) == 3 and messages[1].startswith("engine.run.machines: machine 1: ")


@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_worker_of_rank_above_zero_writes_nothing(tmp_path, monkeypatch, rank):
    """Rank 1 (machine 1's first GPU) fails on the same missing model as rank 0, and leaves
    the database as it was: no status, no phase, no error, no log line (rank 0 records them)."""
    from engine.run import worker
    from engine.runtime.stop_request import StopRequest

    with Database(db_path(tmp_path)) as db:
        run_store.create_run(db, run_id="grpo-1", algorithm="grpo", config={})
    path = RunConfig.from_dict({"model": {"name_or_path": str(tmp_path / "no-model")}}).save(
        tmp_path / "config.yaml"
    )
    monkeypatch.setenv("RANK", rank)
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):  # the worker sets them
        monkeypatch.setenv(name, str(tmp_path / name))
    status = worker.run(path, "grpo-1", tmp_path, stop=StopRequest())
    assert status == RunStatus.FAILED
    with Database(db_path(tmp_path)) as db:
        run = run_store.get_run(db, "grpo-1")
        logged, _ = logs_since(db, "grpo-1")
    if rank == "0":
        assert run.status == RunStatus.FAILED and "no-model" in run.error_message
        assert any("Run grpo-1 failed" in line.message for line in logged)
    else:
        assert run.status == RunStatus.QUEUED and run.error_message is None and not logged


def test_the_app_starts_machine_zero_and_its_runs_log_tells_the_others(data_dir):
    """The dashboard's path: dispatch writes the machines file, starts machine 0 from it and
    stores machine 1's command in the run's log; stopping the run ends machine 0's process
    group."""
    import os
    import socket

    from engine.run.launcher import Launcher

    with socket.socket() as probe:  # a port nothing listens on: machine 0's rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launcher = Launcher(data_dir, gpus=list)
    run_id = launcher.start(config({"main_port": port, "steps": 1}))
    proc = launcher._children[run_id]
    try:
        with Database(db_path(data_dir)) as db:
            messages = [line.message for line in logs_since(db, run_id)[0]]
            assert run_store.get_run(db, run_id).status == RunStatus.RUNNING
        folder = launcher.run_dir(run_id)
        assert (folder / MACHINES_CONFIG_FILE).exists()
        (line,) = [m for m in messages if "machine 1: " in m]
        other = shlex.split(line.split("machine 1: ", 1)[1])
        assert other[other.index("--machine_rank") + 1] == "1"
        assert other[other.index("--run-id") + 1] == run_id
        assert other[other.index("--data-dir") + 1] == str(data_dir)
        assert proc.poll() is None  # machine 0 runs (until machine 1 joins or it is stopped)
    finally:
        launcher.stop(run_id)
        proc.wait(timeout=60)
    with pytest.raises(ProcessLookupError):  # nothing of machine 0's group is left
        os.killpg(proc.pid, 0)
