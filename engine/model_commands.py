"""The CLI's commands on a run's model: ``export`` (its records, or its model in a format other
tools load), ``generate`` (replies to a prompt, scored by the run's reward) and ``push`` (to the
Hub). Imports stay inside the commands, so ``python -m engine --help`` loads no torch.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from storage.paths import resolve_data_dir

#: ``export --format`` choices (engine.exports.run_export.FORMATS, without importing torch).
EXPORT_FORMATS = ("hf", "merged", "gguf", "ollama")
logger = logging.getLogger(__name__)


def cmd_export(args: argparse.Namespace) -> int:
    if args.format:
        return _export_model(args)
    from engine.run.launcher import Launcher, LaunchError
    from engine.runtime.checkpoints import latest_model_dir
    from storage.export import export_run
    from storage.paths import db_path
    from storage.runs import get_run
    from storage.sqlite.db import Database

    launcher = Launcher(resolve_data_dir(args.data_dir))
    with Database(db_path(launcher.data_dir)) as db:
        if get_run(db, args.run_id) is None:
            raise LaunchError(f"no run with id {args.run_id!r}")
        model_dir = latest_model_dir(launcher.run_dir(args.run_id)) if args.model else None
        if args.model and model_dir is None:
            raise LaunchError(f"run {args.run_id} has no final model or checkpoint to export")
        out = export_run(db, args.run_id, args.output, model_dir=model_dir)
    print(f"exported {args.run_id} to {out}")
    return 0


def _export_model(args: argparse.Namespace) -> int:
    """``export --format``: the run's model in a format other tools load."""
    from engine.exports.gguf_file import GGUFExportError
    from engine.exports.run_export import ExportError, export_recorded_run
    from engine.run.launcher import Launcher, LaunchError
    from storage.paths import db_path
    from storage.runs import get_run
    from storage.sqlite.db import Database

    launcher = Launcher(resolve_data_dir(args.data_dir))
    with Database(db_path(launcher.data_dir)) as db:
        if get_run(db, args.run_id) is None:
            raise LaunchError(f"no run with id {args.run_id!r}")
        key = "latest" if args.checkpoint is None else _model_key(args.checkpoint)
        try:
            result = export_recorded_run(
                db,
                args.run_id,
                launcher.run_dir(args.run_id),
                Path(args.output),
                args.format,
                quant=args.quant,
                model_key=key,
            )
        except (ExportError, GGUFExportError) as exc:
            raise LaunchError(str(exc)) from None
    print(f"exported {args.run_id} as {args.format} to {result.folder}: {', '.join(result.files)}")
    if result.command:
        print(f"run it, in that folder: {result.command}")
    return 0


def _model_key(checkpoint: str) -> str:
    """``--checkpoint``: a step number, ``base``, ``final`` or a checkpoint folder name."""
    return f"checkpoint-{checkpoint}" if checkpoint.isdigit() else checkpoint


def cmd_generate(args: argparse.Namespace) -> int:
    """Replies of a run's model to a prompt, streamed, then scored by the run's reward."""
    from engine.generation.playground import (
        GenerateError,
        SamplingSettings,
        chat_prompt,
        stream_replies,
    )
    from engine.run.launcher import Launcher, LaunchError
    from engine.run.saved_models import RunModelError, load_run_model, recorded_config
    from rewards.composer import score

    launcher = Launcher(resolve_data_dir(args.data_dir))
    run_dir = launcher.run_dir(args.run_id)
    config = recorded_config(launcher.data_dir, args.run_id)
    if config is None:
        raise LaunchError(f"no run with id {args.run_id!r}")
    key = "base" if args.base else _model_key(args.checkpoint or "latest")
    settings = SamplingSettings(
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        num_samples=args.samples,
        seed=args.seed,
    )
    try:
        settings.check()
        model, tokenizer, which = load_run_model(run_dir, key, config=config)
    except (GenerateError, RunModelError) as exc:
        raise LaunchError(str(exc)) from None
    system = _data_system_prompt(config)
    prompt = chat_prompt(args.prompt, system)
    print(f"{which.label} of run {args.run_id}:", flush=True)
    shown = 0
    replies: list[str] = []
    for replies in stream_replies(model, tokenizer, prompt, settings):
        if settings.num_samples == 1:  # one reply: print it as it grows
            sys.stdout.write(replies[0][shown:])
            sys.stdout.flush()
            shown = len(replies[0])
    scored = score(config.reward, [args.prompt] * len(replies), replies)
    for i, (reply, sample) in enumerate(zip(replies, scored, strict=True)):
        if settings.num_samples > 1:
            print(f"--- sample {i + 1}\n{reply}")
        total = "unscored" if sample.total is None else f"{sample.total:.3f}"
        parts = ", ".join(f"{t.name} {t.raw}" for t in sample.trace)
        print(f"\n[reward {total}: {parts}]")
    return 0


def _data_system_prompt(config) -> str | None:
    """The system prompt of the run's data (its first row's, what the model was trained with),
    as the Playground reads it; the config's own when the data cannot be read here."""
    from dataclasses import replace

    from engine.data.datasets import DatasetError, load_rows
    from engine.generation.playground import DATA_PROMPTS
    from rewards.completions.text import system_text

    try:  # as many rows as the Playground reads, so that both take the same first row
        rows = load_rows(replace(config.data, max_rows=DATA_PROMPTS))
    except (DatasetError, OSError) as exc:
        logger.info("Could not read the run's data for its system prompt (%s)", exc)
        return config.data.system_prompt or None
    return system_text(rows[0]["prompt"]) if rows else None


def cmd_push(args: argparse.Namespace) -> int:
    from engine.exports.hub import HubPushError, push_model
    from engine.run.launcher import Launcher, LaunchError
    from engine.run.saved_models import recorded_config

    launcher = Launcher(resolve_data_dir(args.data_dir))
    if not launcher.run_dir(args.run_id).is_dir():
        raise LaunchError(f"no run with id {args.run_id!r}")
    token = os.environ.get(args.token_env, "")
    if not token:
        raise LaunchError(f"set {args.token_env} to a Hugging Face write token")
    config = recorded_config(launcher.data_dir, args.run_id)
    if config is None:
        raise LaunchError(f"no run with id {args.run_id!r}")
    try:
        url = push_model(
            launcher.run_dir(args.run_id),
            args.repo_id,
            token,
            config_text=config.to_yaml(),
            merged=args.merged,
        )
    except HubPushError as exc:
        raise LaunchError(str(exc)) from None
    print(f"pushed {args.run_id} to {url}")
    return 0


def add_commands(add) -> None:
    """Add ``export``, ``generate`` and ``push`` through the CLI's ``add(name, func, help)``."""
    p = add(
        "export",
        cmd_export,
        "Write a run's metrics (CSV), samples (JSONL), logs, config; with --format, its model.",
    )
    p.add_argument("run_id")
    p.add_argument("output", help="folder to write into")
    p.add_argument("--model", action="store_true", help="also copy the final model/checkpoint")
    p.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default=None,
        help="export the model instead: hf (as saved), merged (LoRA merged into its base), "
        "gguf (llama.cpp), ollama (GGUF + Modelfile); each with a model card",
    )
    p.add_argument("--quant", choices=("F16", "Q8_0"), default="F16", help="GGUF weights")
    p.add_argument(
        "--checkpoint",
        default=None,
        help="which model: a checkpoint step, 'base' or 'final' (default: final, else newest)",
    )
    p = add("generate", cmd_generate, "Generate replies of a run's model to a prompt, scored.")
    p.add_argument("run_id")
    p.add_argument("prompt")
    p.add_argument("--checkpoint", default=None, help="a checkpoint step (default: final model)")
    p.add_argument("--base", action="store_true", help="the model the run started from")
    p.add_argument("--samples", type=int, default=1, help="replies to draw")
    p.add_argument("--temperature", type=float, default=0.8, help="0 for greedy")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p = add("push", cmd_push, "Upload a run's final model (or newest checkpoint) to the Hub.")
    p.add_argument("run_id")
    p.add_argument("repo_id", help="owner/name of a Hub model repo (created if missing)")
    p.add_argument("--token-env", default="HF_TOKEN", help="variable holding a write token")
    p.add_argument(
        "--merged",
        action="store_true",
        help="a LoRA run: merge the adapter into its base and push full weights (default: the "
        "adapter, with base_model.json naming its base)",
    )
