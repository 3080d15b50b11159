"""bench/two_machines.py on the CPU: its arguments, a dry run that builds both machines'
commands as the launcher and the CLI do, and the process handling the GPU run relies on
(machine 1's command read from machine 0's output, process groups ended at the end)."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
import yaml

from bench import two_machines


def test_arguments_are_checked_by_name(capsys):
    args = two_machines.parse_args([])
    assert (args.model_shape, args.steps, args.distributed, args.transport) == (
        "small",
        5,
        "ddp",
        "socket",
    )
    for bad, message in (
        (["--generations", "1"], "--generations: GRPO needs at least 2"),
        (["--prompts", "3", "--generations", "3"], "split evenly over the 2 machines"),
        (["--run-timeout", "0"], "must be > 0 seconds"),
        (["--model-shape", "large"], "invalid choice"),
    ):
        with pytest.raises(SystemExit):
            two_machines.parse_args(bad)
        assert message in capsys.readouterr().err


def test_a_dry_run_builds_both_machines_commands(tmp_path, capsys):
    work = tmp_path / "work dir"  # a space: the printed command quotes it, the bench reads it
    report = two_machines.main(["--dry-run", "--work-dir", str(work), "--port", "29600"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == report
    assert report["machine_1_command_as_built"]
    zero, one = report["machine_0_command"], report["machine_1_command"]
    assert zero[zero.index("--machine_rank") + 1] == "0"
    assert one[one.index("--machine_rank") + 1] == "1"
    assert one[one.index("--data-dir") + 1] == str(work / "data")  # the same data dir
    settings = yaml.safe_load(report["accelerate_config"])
    assert (settings["num_machines"], settings["num_processes"]) == (2, 2)
    assert (settings["main_process_ip"], settings["main_process_port"]) == ("127.0.0.1", 29600)
    assert (report["machine_0_gpus"], report["machine_1_gpus"]) == ("0", "1")


def test_machine_one_starts_from_machine_zeros_output_and_every_group_is_ended(tmp_path):
    """A stand-in for machine 0 prints the line and keeps a child running: the line is found,
    and ending its group leaves none of its processes."""
    script = textwrap.dedent(
        """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        print("run r: 2 machines", flush=True)
        print("machine 1: python -m accelerate.commands.launch --machine_rank 1", flush=True)
        time.sleep(120)
        """
    )
    log = tmp_path / "machine0.log"
    proc = two_machines.start([sys.executable, "-c", script], dict(os.environ), log)
    line = two_machines.wait_for_line(proc, log, two_machines.MACHINE_PREFIX, timeout=60)
    assert line is not None
    command = two_machines.machine_one_command(line)
    assert command[0] == sys.executable and command[1:5] == [
        "-m",
        "accelerate.commands.launch",
        "--machine_rank",
        "1",
    ]
    two_machines.end_group(proc)
    assert proc.returncode is not None
    with pytest.raises(ProcessLookupError):  # nothing of its process group is left
        os.killpg(proc.pid, 0)
    # a machine 0 that ends without the line: no command, no wait for the time limit
    quiet_log = tmp_path / "quiet.log"
    quiet = two_machines.start([sys.executable, "-c", "print('no')"], dict(os.environ), quiet_log)
    assert two_machines.wait_for_line(quiet, quiet_log, two_machines.MACHINE_PREFIX, 60) is None
    assert quiet.returncode == 0


def test_a_machine_zero_that_cannot_start_is_reported_with_its_log(tmp_path):
    """Machine 0 refuses a model that is not there (by field, before any launch): no command
    for machine 1, machine 0's exit code and log tail in the report, no process left."""
    args = two_machines.parse_args(["--cpu", "--join-timeout", "120"])
    config = two_machines.run_config(args, tmp_path / "no-model", tmp_path / "p.jsonl")
    result = two_machines.train(args, tmp_path, config)
    assert result["failure"] == "machine 0 printed no command for machine 1"
    assert result["exit_machine_0"] == 2 and result["exit_machine_1"] is None
    assert "model.name_or_path" in result["log_tail_machine_0"]
    assert not result["machine_1_trained"] and not result["note_in_run_log"]
