"""Two "machines" on one two-GPU host: a GRPO run through accelerate's multi-machine launch.

Builds a random-init Qwen2 (``--model-shape small``: Qwen2.5-0.5B's shape; ``tiny``: a smoke
shape) with bench/fsdp_check.py's builder, then starts the run as an operator of two machines
would, over ``--address`` (127.0.0.1):

1. machine 0: ``python -m engine train`` on a config with ``training.num_machines: 2``,
   ``num_gpus: 1`` (``CUDA_VISIBLE_DEVICES=0``). It writes the run's accelerate config file,
   launches itself as machine rank 0 and prints the command each other machine runs;
2. machine 1: that printed command, read from machine 0's output (``--machine_rank 1``, the
   same config file and data dir), with ``CUDA_VISIBLE_DEVICES=1``.

``--transport socket`` (the default) turns NCCL's shared-memory and peer-to-peer paths off and
keeps it on the loopback interface (``NCCL_P2P_DISABLE``, ``NCCL_SHM_DISABLE``,
``NCCL_IB_DISABLE``, ``NCCL_SOCKET_IFNAME=lo``), so the two processes talk as two machines
would, over TCP; ``auto`` lets NCCL pick (each process sees one GPU only). ``--cpu`` runs both
machines on the CPU (torch's gloo backend), the tiny shape by default: the same launch, parsing
and read-back without a GPU.

Every process runs in its own process group with a wall-clock limit (``--run-timeout`` for the
run, ``--join-timeout`` for machine 0 to print machine 1's command); at the end every group
left is ended. Reports both exit codes, s/step, the main process's peak memory and whether
metrics and samples were written once (bench/fsdp_check.py's ``read_back``), whether machine 1
trained (its worker's log) and wrote nothing, the command machine 1 ran, and the logs' tails
on failure. Ends with one JSON line.

    python bench/two_machines.py                  # 0.5B shape, 5 steps, 2 GPUs (~3 minutes)
    python bench/two_machines.py --dry-run        # CPU: the configs and commands only
    python bench/two_machines.py --cpu --steps 3  # CPU: both machines train a tiny shape
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fsdp_check import (  # noqa: E402
    SAMPLES_PER_LOG,
    build,
    built_model_grpo,
    problem_words,
    read_back,
)
from gpu_throughput import write_problems  # noqa: E402

from engine.config.run_config import RunConfig  # noqa: E402
from engine.run.launcher import run_command  # noqa: E402
from engine.run.machines import machine_command, other_machines_note  # noqa: E402
from engine.runtime.layout import config_path, run_dir  # noqa: E402

logger = logging.getLogger("two_machines")

MACHINE_PREFIX = "machine 1: "  # how machine 0's note starts machine 1's command
SOCKET_ENV = {
    "NCCL_P2P_DISABLE": "1",
    "NCCL_SHM_DISABLE": "1",
    "NCCL_IB_DISABLE": "1",
    "NCCL_SOCKET_IFNAME": "lo",
    "GLOO_SOCKET_IFNAME": "lo",
}
TAIL_CHARS = 3000
POLL_S = 1.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model-shape", choices=("small", "tiny"), default=None, help="default: small, tiny on CPU"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="both machines on this host's CPU (gloo), no GPU"
    )
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--distributed", choices=("ddp", "fsdp"), default="ddp")
    parser.add_argument("--transport", choices=("socket", "auto"), default="socket")
    parser.add_argument("--address", default="127.0.0.1", help="machine 0's address")
    parser.add_argument("--port", type=int, default=29531, help="machine 0's rendezvous port")
    parser.add_argument("--run-timeout", type=float, default=420.0, help="seconds for the run")
    parser.add_argument(
        "--join-timeout",
        type=float,
        default=240.0,
        help="seconds for machine 0 to print machine 1's command",
    )
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a temporary one")
    parser.add_argument(
        "--dry-run", action="store_true", help="write the config and build the commands only"
    )
    args = parser.parse_args(argv)
    args.model_shape = args.model_shape or ("tiny" if args.cpu else "small")
    for name in ("steps", "prompts", "tokens"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be >= 1")
    if args.generations < 2:
        parser.error("--generations: GRPO needs at least 2 completions per prompt")
    if (args.prompts * args.generations) % 2:
        parser.error("--prompts x --generations must split evenly over the 2 machines")
    if args.run_timeout <= 0 or args.join_timeout <= 0:
        parser.error("--run-timeout and --join-timeout: must be > 0 seconds")
    return args


def run_config(args: argparse.Namespace, model_dir: Path, data: Path) -> RunConfig:
    """GRPO on the built model, full fine-tune, one GPU on each of two machines."""
    return built_model_grpo(
        f"two-machines-{args.model_shape}-{args.distributed}",
        args,
        model_dir,
        data,
        num_gpus=1,
        num_machines=2,
        main_address=args.address,
        main_port=args.port,
        distributed=args.distributed,
        samples_per_log=SAMPLES_PER_LOG,
    )


def machine_env(gpu: int, transport: str, cpu: bool = False) -> dict[str, str]:
    """The environment of the machine that trains on GPU ``gpu`` (none with ``cpu``)."""
    env = {
        **os.environ,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": "" if cpu else str(gpu),
        "HF_HUB_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    return {**env, **SOCKET_ENV} if transport == "socket" else env


def machine_one_command(line: str) -> list[str]:
    """Machine 1's argv from machine 0's note line, run with this Python."""
    argv = shlex.split(line.split(MACHINE_PREFIX, 1)[1])
    return [sys.executable, *argv[1:]]


def dry_run(args: argparse.Namespace, work: Path, config: RunConfig) -> dict[str, Any]:
    """Machine 0's command, the accelerate file it writes and machine 1's command, as the
    launcher and the CLI build them for a run ``dry-run`` in ``work/data``; nothing starts."""
    data_dir = work / "data"
    folder = run_dir(data_dir, "dry-run")
    folder.mkdir(parents=True, exist_ok=True)
    config.save(config_path(folder))
    zero = run_command(config, folder, "dry-run", data_dir)
    note = other_machines_note(config.training, folder, "dry-run", data_dir)
    (line,) = [n for n in note if n.startswith(MACHINE_PREFIX)]
    one = machine_one_command(line)
    file = folder / "accelerate_machines.yaml"
    expected = machine_command(file, 1, config_path(folder), "dry-run", data_dir, sys.executable)
    return {
        "machine_0_command": zero,
        "machine_1_command": one,
        "machine_1_command_as_built": one == expected,
        "accelerate_config": file.read_text(),
        "machine_0_gpus": machine_env(0, args.transport, args.cpu)["CUDA_VISIBLE_DEVICES"],
        "machine_1_gpus": machine_env(1, args.transport, args.cpu)["CUDA_VISIBLE_DEVICES"],
        "note": note,
    }


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """``argv`` in its own process group (ended together at the end), output to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def end_group(proc: subprocess.Popen) -> None:
    """End ``proc``'s process group: SIGTERM, then SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            os.killpg(proc.pid, 0)  # raises once the group's last process is gone
            time.sleep(1.0)
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def wait_for_line(proc: subprocess.Popen, log: Path, prefix: str, timeout: float) -> str | None:
    """The first line of ``log`` that starts with ``prefix``, waiting up to ``timeout``
    seconds while ``proc`` runs; None if it exits or the time passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(prefix):
                return line
        if proc.poll() is not None:
            return None
        time.sleep(POLL_S)
    return None


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-TAIL_CHARS:] if log.exists() else ""


def stored_note(data_dir: Path) -> bool:
    """Whether the run's stored log (the Runs view's) holds machine 1's command."""
    from storage.paths import db_path

    con = sqlite3.connect(db_path(data_dir))
    try:
        rows = con.execute("SELECT message FROM log_line").fetchall()
    except sqlite3.Error:
        return False
    finally:
        con.close()
    return any(MACHINE_PREFIX in message for (message,) in rows)


def train(args: argparse.Namespace, work: Path, config: RunConfig) -> dict[str, Any]:
    """Machine 0 through the CLI, machine 1 by its printed command; both within the limits."""
    data_dir = work / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    path = config.save(work / "config.yaml")
    logs = [work / "machine0.log", work / "machine1.log"]
    started = time.monotonic()
    zero = start(
        [sys.executable, "-m", "engine", "train", str(path), "--data-dir", str(data_dir)],
        machine_env(0, args.transport, args.cpu),
        logs[0],
    )
    procs = [zero]
    result: dict[str, Any] = {}
    try:
        line = wait_for_line(zero, logs[0], MACHINE_PREFIX, args.join_timeout)
        if line is None:
            result["failure"] = "machine 0 printed no command for machine 1"
        else:
            command = machine_one_command(line)
            result["machine_1_command"] = shlex.join(command)
            procs.append(start(command, machine_env(1, args.transport, args.cpu), logs[1]))
            deadline = started + args.run_timeout
            for proc in procs:
                try:
                    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    result["failure"] = f"the run passed --run-timeout {args.run_timeout:.0f} s"
                    break
    finally:
        for proc in procs:
            end_group(proc)
    result["wall_s"] = round(time.monotonic() - started, 1)
    codes = [p.returncode for p in procs] + [None] * (2 - len(procs))
    result["exit_machine_0"], result["exit_machine_1"] = codes
    # machine 1's worker logs its model load to its own output, never to the database
    machine_one = logs[1].read_text(errors="replace") if logs[1].exists() else ""
    result["machine_1_trained"] = "Loading model" in machine_one
    result["note_in_run_log"] = stored_note(data_dir)
    if result.get("failure") or any(c != 0 for c in codes):
        result["log_tail_machine_0"] = tail(logs[0])
        result["log_tail_machine_1"] = tail(logs[1])
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="two-machines-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        data, model_dir = work / "problems.jsonl", work / f"qwen2-{args.model_shape}"
        write_problems(data, 4 * args.prompts)
        config = run_config(args, model_dir, data)
        report: dict[str, Any] = {
            "machines": 2,
            "gpus_per_machine": 0 if args.cpu else 1,
            "model_shape": args.model_shape,
            "distributed": args.distributed,
            "transport": args.transport,
            "steps": args.steps,
            "completions_per_step": args.prompts * args.generations,
            "new_tokens": args.tokens,
        }
        if args.dry_run:
            report.update(dry_run(args, work, config))
        else:
            started = time.monotonic()
            report["parameters"] = build(model_dir, args.model_shape, problem_words(data))
            report["build_s"] = round(time.monotonic() - started, 1)
            logger.info("built %s; starting machine 0", model_dir.name)
            report.update(train(args, work, config))
            back = read_back(work / "data")
            report.update(back)
            report["ok"] = (
                back.get("status") == "completed"
                and back.get("written_once") is True
                and report["exit_machine_0"] == 0
                and report["exit_machine_1"] == 0
                and report["machine_1_trained"]
            )
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
