"""The headless CLI: ``python -m engine COMMAND``; ``--help`` lists the commands.

``train`` runs a config in the foreground with a progress bar and writes the same storage as the
dashboard, so CLI runs show up there; ``run`` is the worker entry point the launcher uses.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from pathlib import Path

from engine.fields import ConfigError
from engine.lab_commands import add_commands as add_lab_commands
from engine.model_commands import add_commands as add_model_commands

logger = logging.getLogger(__name__)


def _data_dir(value: str | None) -> Path:
    from storage.paths import resolve_data_dir

    return resolve_data_dir(value)


def _load_config(path: str):
    """The run config in file ``path``, its text parsed once."""
    from engine.config.run_config import RunConfig
    from engine.fields import parse_yaml

    data = parse_yaml(RunConfig.read_text(path))
    if not data:  # an empty file would silently train the default config (the API refuses it too)
        raise ConfigError(
            "",
            f"config file {path} is empty; write a run config "
            "(`python -m engine export-config` writes a documented one)",
        )
    return RunConfig.from_dict(data)


def cmd_train(args: argparse.Namespace) -> int:
    config = _load_config(args.config)  # a config it cannot use fails before torch is imported
    from engine.planning.micro_batch import describe, local_card_bytes
    from engine.run.launcher import Launcher, run_command
    from engine.runtime.devices import Assignment
    from storage.sqlite.schema import LOCAL_OWNER, RunStatus

    launcher = Launcher(_data_dir(args.data_dir))
    # Before anything touches CUDA: this run sees only its GPUs (the free ones, else the least
    # busy: a foreground run does not wait).
    runs = launcher.list(scan=False)  # main() has just marked runs whose worker died
    active = [r.id for r in runs if r.status == RunStatus.RUNNING]
    # None: more GPUs asked for than the machine has, which record() refuses by field.
    assignment = launcher.assign(config, active, launcher.max_concurrent, wait=False)
    assignment = assignment or Assignment()
    if assignment.gpu_ids:
        os.environ.update(assignment.env())
    # The command line is the machine's operator: its runs belong to the local owner.
    run_id = launcher.record(config, pid=os.getpid(), owner=LOCAL_OWNER)
    if assignment.gpu_ids:
        assignment.save(launcher.run_dir(run_id))
    print(
        f"run {run_id}: {config.algorithm} for {config.training.steps} steps; "
        f"data in {launcher.data_dir}"
        + (f"; GPUs {assignment.env()['CUDA_VISIBLE_DEVICES']}" if assignment.gpu_ids else "")
    )
    print(describe(config, local_card_bytes()))
    if config.training.processes > 1:  # one process per GPU, started as the dashboard starts them
        cmd = run_command(config, launcher.run_dir(run_id), run_id, launcher.data_dir)
        if config.training.num_machines > 1:
            _tell_other_machines(config, launcher.run_dir(run_id), run_id, launcher.data_dir)
        returncode = subprocess.call(cmd)  # Ctrl-C reaches every process of the foreground group
        status = _final_status(launcher.data_dir, run_id, returncode)
    else:
        from engine.run import worker  # the trainers' imports, once the run is recorded

        # The object already parsed and recorded: this process needs no file.
        status = worker.run(config, run_id, launcher.data_dir, show_progress=True)
    print(f"run {run_id}: {status}")
    return 0 if status != RunStatus.FAILED else 1


def _tell_other_machines(config, run_dir: Path, run_id: str, data_dir: Path) -> None:
    """Print the command each other machine of the run runs, and keep it in the run's log."""
    from engine.run.machines import other_machines_note, store_note
    from storage.paths import db_path
    from storage.sqlite.db import Database

    note = other_machines_note(config.training, run_dir, run_id, data_dir)
    print("\n".join(note), flush=True)
    with Database(db_path(data_dir)) as db:
        store_note(db, run_id, note)


def cmd_estimate(args: argparse.Namespace) -> int:
    from engine.planning.memory import GIB
    from engine.planning.micro_batch import describe, local_card_bytes

    config = _load_config(args.config)
    card = local_card_bytes() if args.card_gib is None else int(args.card_gib * GIB)
    print(describe(config, card))
    return 0


def _final_status(data_dir: Path, run_id: str, returncode: int) -> str:
    """The status the workers recorded; ``failed`` if they all ended without recording one."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    with Database(db_path(data_dir)) as db:
        run = run_store.get_run(db, run_id)
        if run.status == RunStatus.RUNNING:
            run_store.set_status(
                db,
                run_id,
                RunStatus.FAILED,
                error=f"the worker processes exited with code {returncode} without a status",
            )
            return RunStatus.FAILED
        return run.status


def cmd_run(args: argparse.Namespace) -> int:
    from engine.runtime.stop_request import StopRequest, install_stop_handlers

    stop = StopRequest()  # before the worker's imports, which take seconds
    install_stop_handlers(stop)

    from engine.run import worker
    from storage.sqlite.schema import RunStatus

    status = worker.run(args.config, args.run_id, _data_dir(args.data_dir), stop=stop)
    return 0 if status != RunStatus.FAILED else 1


def cmd_runs(args: argparse.Namespace) -> int:
    from engine.run.launcher import Launcher

    runs = Launcher(_data_dir(args.data_dir)).list(scan=False)  # main() has just scanned
    if not runs:
        print("no runs yet")
        return 0
    print(f"{'id':<16} {'status':<12} {'algorithm':<9} {'step':>11}  {'owner':<16} name")
    for run in runs:
        step = f"{run.last_step or 0}/{run.total_steps or '?'}"
        print(
            f"{run.id:<16} {run.status:<12} {run.algorithm:<9} {step:>11}  {run.owner:<16} "
            f"{run.name}"
        )
    return 0


def _lifecycle(action: str):
    def command(args: argparse.Namespace) -> int:
        from engine.run.launcher import Launcher

        getattr(Launcher(_data_dir(args.data_dir)), action)(args.run_id)
        print(f"{action}: {args.run_id}")
        return 0

    return command


def cmd_export_config(args: argparse.Namespace) -> int:
    from engine.config.pretrained import local_gpu
    from engine.config.run_config import documented_yaml
    from engine.config.suggestions import suggested_config, suggestion_sources
    from engine.models.specs import DEFAULT_MODEL_ALIAS

    on_gpu = {"auto": None, "gpu": True, "cpu": False}[args.device]
    sources: dict[str, str] = {}
    if args.task == "agent":
        from engine.config.agent import agent_config
        from engine.models.specs import AGENT_MODEL_ALIAS

        # The agent run's settings are the shipped agent model's (its length, learning rate,
        # the calculator it already calls): written for another model they would mislead.
        if args.model not in (None, AGENT_MODEL_ALIAS):
            print(
                f"error: --task agent trains the shipped agent model ({AGENT_MODEL_ALIAS!r}), "
                f"not {args.model!r}: drop --model, or write the agent config and set "
                "model.name_or_path in it",
                file=sys.stderr,
            )
            return 2
        config = agent_config()
        if args.algorithm:
            from engine.config.run_config import RunConfig

            config = RunConfig.from_dict({**config.to_dict(), "algorithm": args.algorithm})
    else:
        model = args.model or DEFAULT_MODEL_ALIAS
        gpu = local_gpu() if on_gpu is None else on_gpu
        algorithm = args.algorithm or "grpo"
        config = suggested_config(model, gpu, algorithm)
        sources = suggestion_sources(algorithm, model != DEFAULT_MODEL_ALIAS, gpu)
    text = documented_yaml(config, sources)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


def _positive_gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"must be a number of GiB > 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func, help_text: str, *, scan: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--data-dir",
            default=None,
            help="where runs are stored (default: $STUDIO_DATA_DIR, /data/studio "
            "when /data exists, else ./studio-data)",
        )
        p.set_defaults(func=func, scan=scan)
        return p

    p = add("train", cmd_train, "Train a config in the foreground, with a progress bar.")
    p.add_argument("config", help="run config YAML (see export-config)")
    p = add(
        "estimate",
        cmd_estimate,
        "Print a config's estimated peak GPU memory, by term.",
        scan=False,  # reads only the config and the model's config
    )
    p.add_argument("config", help="run config YAML")
    p.add_argument(
        "--card-gib",
        type=_positive_gib,
        default=None,
        help="estimate for a GPU of this many GiB (default: this machine's GPU, else the CPU)",
    )
    p = add(
        "run",
        cmd_run,
        "Worker entry point: run one recorded run (used by the launcher).",
        scan=False,  # started by a dispatch, which has just scanned
    )
    p.add_argument("config")
    p.add_argument("--run-id", required=True)
    add("runs", cmd_runs, "List runs with their status and progress.")
    for action, text in (
        ("stop", "Stop a run after its current step, saving a checkpoint."),
        ("resume", "Resume a stopped, interrupted or failed run."),
        ("delete", "Delete a run with its metrics, samples and files."),
    ):
        add(action, _lifecycle(action), text).add_argument("run_id")
    p = add(
        "export-config", cmd_export_config, "Write a documented default run config.", scan=False
    )
    p.add_argument("output", nargs="?", default="-", help="file to write (default: stdout)")
    p.add_argument(
        "--model",
        default=None,
        help="model to start from (default: the shipped model); any model but the default gets "
        "LoRA and pretrained settings; refused with --task agent, which trains the agent model",
    )
    p.add_argument(
        "--task",
        choices=("arithmetic", "agent"),
        default="arithmetic",
        help="arithmetic: the built-in word problems; agent: the shipped agent model, the "
        "calculator and the multi-digit products where calling it pays",
    )
    p.add_argument(
        "--device",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="the device the pretrained settings are for (auto: a GPU if this machine has one)",
    )
    p.add_argument(
        "--algorithm",
        default=None,
        help="the algorithm to suggest settings for: grpo (default), rloo or ppo; a comment "
        "says where each suggested number comes from",
    )
    add_model_commands(add)
    add_lab_commands(add)
    return parser


def main(argv: list[str] | None = None) -> int:
    for key, value in (
        ("HF_HUB_DISABLE_TELEMETRY", "1"),
        ("TRL_EXPERIMENTAL_SILENCE", "1"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ):
        os.environ.setdefault(key, value)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = build_parser().parse_args(argv)
    try:
        if args.scan:  # runs whose worker died are marked before anything reads or changes them
            from engine.run.launcher import Launcher

            Launcher(_data_dir(args.data_dir)).scan()
        return args.func(args)
    except ConfigError as exc:
        print(f"error: invalid config: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file or folder the user named cannot be read or written
        print(f"error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2
    except Exception as exc:
        from engine.run.launcher import LaunchError

        if isinstance(exc, LaunchError):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise
