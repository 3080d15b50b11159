"""Where a GPU training step's time goes: sampling, scoring, forwards, backward, optimizer.

Runs GRPO (TRL's trainer built as the worker builds it) or our PPO in this process on the
0.5B-shaped model of ``gpu_throughput.py``, with each phase's method wrapped by a timer that
synchronises the device before and after (so a phase's kernels are counted in it, not in the
next one). The first step (compile, graph capture) is left out of the medians. With
``--profile-dir`` the last step also runs under ``torch.profiler`` and its top kernels by CUDA
time are written there.

    python bench/step_phases.py --algorithm grpo --micro-batch 64 --steps 4
    python bench/step_phases.py --algorithm ppo --micro-batch 64 --steps 4 --profile-dir /tmp/p
    python bench/step_phases.py --model smollm2-135m-instruct --suggested --tokens 32 --steps 25

``--suggested`` runs ``--model`` with the settings ``export-config --model`` suggests for a GPU
(the built-in task, the reward preset, the micro-batch picked for the card). ``--profile-dir``
gets the profiled step's top calls by GPU time, host time and own host time, and its trace.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import json
import logging
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from gpu_throughput import build_model, run_config, write_problems

from engine.config.run_config import RunConfig

PHASES: dict[str, list[tuple[str, str]]] = {
    "grpo": [
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_generate_single_turn"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_calculate_rewards"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_generate_and_score_completions"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_generate"),
        ("engine.generation.decode_weights:DecodeWeights", "refresh"),
        ("engine.generation.decoder:StaticDecoder", "prefill"),
        ("engine.generation.runner:GenerationRunner", "_sample"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_tokenize_prompts"),
        ("transformers.tokenization_utils_base:PreTrainedTokenizerBase", "batch_decode"),
        ("transformers.trainer:Trainer", "get_batch_samples"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_compute_loss"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "_get_per_token_logps_and_entropies"),
        ("engine.trainers.trl.grpo:StudioGRPOTrainer", "training_step"),
        ("accelerate:Accelerator", "backward"),
        ("accelerate:Accelerator", "clip_grad_norm_"),
        ("accelerate.optimizer:AcceleratedOptimizer", "step"),
    ],
    "ppo": [
        ("engine.trainers.ppo.rollout:Rollouts", "generate"),
        ("engine.trainers.ppo.rollout:Rollouts", "score"),
        ("engine.trainers.ppo.rollout:Rollouts", "evaluate_rollout"),
        ("engine.trainers.ppo.update:PolicyUpdate", "update"),
        ("engine.trainers.ppo.update:completion_forward", ""),
        ("accelerate:Accelerator", "backward"),
        ("accelerate:Accelerator", "clip_grad_norm_"),
        ("accelerate.optimizer:AcceleratedOptimizer", "step"),
    ],
}


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class PhaseClock:
    """Seconds per phase, summed within a step; ``end_step`` closes the step."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.steps: list[dict[str, float]] = []
        self.step_started = time.perf_counter()

    def wrap(self, name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            _sync()
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                _sync()
                self.current[name] += time.perf_counter() - started

        return timed

    def end_step(self) -> None:
        _sync()
        now = time.perf_counter()
        self.current["step"] = now - self.step_started
        self.steps.append(dict(self.current))
        self.current = defaultdict(float)
        self.step_started = now


def install(clock: PhaseClock, algorithm: str) -> None:
    import importlib

    for target, attr in PHASES[algorithm]:
        module_name, owner = target.split(":")
        module = importlib.import_module(module_name)
        if attr:
            cls = getattr(module, owner)
            setattr(cls, attr, clock.wrap(f"{owner}.{attr}", getattr(cls, attr)))
        else:
            setattr(module, owner, clock.wrap(owner, getattr(module, owner)))


def run_grpo(
    config, model, tokenizer, rows, out: Path, clock: PhaseClock, profile, cprofile
) -> None:
    from datasets import Dataset
    from transformers import TrainerCallback

    from engine.data.prompts import for_trainer
    from engine.trainers.trl.build import build_trl_trainer

    class StepEnd(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == config.training.steps - 1:
                profile.__enter__()

        def on_step_end(self, args, state, control, **kwargs):
            clock.end_step()
            if cprofile is not None and state.global_step == 1:
                cprofile.enable()

    trainer = build_trl_trainer(
        config, model, tokenizer, Dataset.from_list(for_trainer(tokenizer, rows)), str(out), []
    )
    trainer.add_callback(StepEnd())
    trainer.train()


def run_ppo(
    config, model, tokenizer, rows, out: Path, clock: PhaseClock, profile, cprofile
) -> None:
    from engine.runtime.stop_request import StopRequest
    from engine.trainers.ppo.trainer import PPOTrainer

    class Recorder:  # the worker's recorder, minus the database
        def metrics(self, step, values):
            pass

        samples = progress = flush = phase = metrics

    trainer = PPOTrainer(config, model, tokenizer, rows, out, Recorder(), StopRequest())
    for step in range(1, config.training.steps + 1):
        if step == config.training.steps:
            profile.__enter__()
        trainer.train_step(step)
        clock.end_step()
        if cprofile is not None and step == 1:
            cprofile.enable()


def suggested(args: argparse.Namespace) -> RunConfig:
    """The GPU suggestion for ``--model`` as ``export-config --model`` gives it, run for
    ``--steps`` steps of up to ``--tokens`` new tokens, logging every step, saving nothing."""
    from engine.config.pretrained import suggested_config

    data = suggested_config(args.model, on_gpu=True).to_dict()
    data["algorithm"] = args.algorithm
    data["generation"]["max_completion_length"] = args.tokens
    data["training"].update(
        steps=args.steps, eval_samples=0, save_steps=0, logging_steps=1, samples_per_log=0
    )
    return RunConfig.from_dict(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", choices=("grpo", "ppo"), default="grpo")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--micro-batch", type=int, default=64)
    parser.add_argument("--profile-dir", type=Path, default=None)
    parser.add_argument(
        "--model", default=None, help="a real model (e.g. smollm2-135m-instruct) instead of 0.5B"
    )
    parser.add_argument("--lora", type=int, default=0, help="LoRA rank on --model (0: none)")
    parser.add_argument(
        "--suggested",
        action="store_true",
        help="--model with the settings suggested for it on a GPU (engine/config/pretrained.py)"
        " on the built-in task; --steps and --tokens still apply",
    )
    parser.add_argument(
        "--cprofile", type=Path, default=None, help="write a cProfile of the steps after the first"
    )
    parser.set_defaults(gpus=1)  # run_config's field: this script runs in one process
    args = parser.parse_args()
    if args.suggested and args.model is None:
        parser.error("--suggested needs --model (the model whose suggestion to run)")
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    from engine.data.datasets import load_rows
    from engine.models.loading import load_model_and_tokenizer
    from engine.planning.micro_batch import local_card_bytes, with_default_micro_batch
    from engine.trainers.compiled_layers import avoid_cudnn_attention

    avoid_cudnn_attention()  # as the worker does
    clock = PhaseClock()
    install(clock, args.algorithm)
    profile: Any = contextlib.nullcontext()
    if args.profile_dir is not None:
        profile = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        )
    with tempfile.TemporaryDirectory(prefix="studio-phases-") as tmp:
        work = Path(tmp)
        model_dir, data = work / "model", work / "problems.jsonl"
        if args.model is None:
            build_model(model_dir, args.layers)
        if args.suggested:
            config = suggested(args)
        else:
            write_problems(data, 4 * args.prompts)
            variant = "ppo_compiled" if args.algorithm == "ppo" else "grpo_compiled"
            config = run_config(variant, args, model_dir, data)
            if args.model is not None:
                r = args.lora
                lora = {"r": r, "alpha": 2 * r, "dropout": 0.0} if r else None
                model_spec = {"name_or_path": args.model, "lora": lora}
                config = RunConfig.from_dict({**config.to_dict(), "model": model_spec})
        card = local_card_bytes()
        if card is not None:  # as the worker does: an empty micro-batch is sized to the card
            config = with_default_micro_batch(config, card)
        model, tokenizer = load_model_and_tokenizer(config.model)
        rows = load_rows(config.data)
        run = run_grpo if args.algorithm == "grpo" else run_ppo
        clock.step_started = time.perf_counter()
        cprofile = cProfile.Profile() if args.cprofile is not None else None
        run(config, model, tokenizer, rows, work / "run", clock, profile, cprofile)
        if cprofile is not None:
            cprofile.disable()
            cprofile.dump_stats(args.cprofile)
        if args.profile_dir is not None:
            profile.__exit__(None, None, None)
            args.profile_dir.mkdir(parents=True, exist_ok=True)
            averages = profile.key_averages()
            name = f"{args.algorithm}_mb{config.training.micro_batch_size}"
            for sort in ("cuda_time_total", "cpu_time_total", "self_cpu_time_total"):
                table = averages.table(sort_by=sort, row_limit=40)
                (args.profile_dir / f"{name}_{sort}.txt").write_text(table)
            profile.export_chrome_trace(str(args.profile_dir / f"{name}_trace.json"))
    # The first step compiles; a profiled last step is slowed by the profiler.
    measured = clock.steps[1 : -1 if args.profile_dir is not None else None]
    report: dict[str, Any] = {
        "card": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "algorithm": args.algorithm,
        "model": args.model or "0.5B shape",
        "micro_batch": config.training.micro_batch_size,
        "steps_measured": len(measured),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if torch.cuda.is_available()
        else None,
    }
    for phase in measured[0]:
        values = [s.get(phase, 0.0) for s in measured]
        report[f"{phase.replace('.', '_').lower()}_s"] = round(statistics.median(values), 4)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
