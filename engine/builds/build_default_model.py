"""Build the shipped default model: a tiny character-level Llama trained on the built-in task.

    python -m engine.builds.build_default_model [--out DIR] [--seed S] [--steps N | --minutes M]

Supervised fine-tuning from random initialisation on generated arithmetic word problems
(``engine.tasks``). Targets mix the strict ``<think>…</think><answer>…</answer>`` format with
looser habits on purpose (``STYLE_MIX``), and training stops well before saturation, so that the
shipped model is neither hopeless nor solved: it leaves a reward something to teach (format)
and something to sharpen (the column procedure inside ``<think>``).

With ``--steps`` (the default) the build is deterministic for a seed on a given machine and
thread count. ``--minutes`` trains for a wall-clock budget instead (not reproducible step for
step). The output folder loads with ``AutoModelForCausalLM`` / ``AutoTokenizer`` and carries a
model card (README.md) with the held-out evaluation measured at the end of the build.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from engine.builds.default_model_card import evaluate_model, model_card
from engine.models.char_tokenizer import build_char_tokenizer
from engine.tasks import ArithmeticTask
from engine.tasks.arithmetic import COMPLETION_STYLES, render_completion

logger = logging.getLogger(__name__)

DEFAULT_OUT = Path(__file__).resolve().parent / "default_model"

# Share of supervised targets per completion style: 60% strict, 40% loose habits (four that
# keep the worked steps, two without working) in equal shares. With prompts in many phrasings the
# strict share must be this high for replies to stay mostly strict on phrasings never trained
# on; the loose share keeps about a quarter of replies off-format, so a format reward still has
# something to teach on the built-in templates.
LOOSE_STYLES = tuple(s for s in COMPLETION_STYLES if s != "strict")
STYLE_MIX: dict[str, float] = {"strict": 0.6, **{s: 0.4 / len(LOOSE_STYLES) for s in LOOSE_STYLES}}


@dataclass
class BuildConfig:
    """Everything that determines the built model.

    Attributes:
        out: output folder (replaced files: config, weights, tokenizer, README.md).
        seed: seeds the task split, the training data stream and the initial weights.
        steps: optimizer steps (ignored when ``minutes`` is set).
        minutes: wall-clock training budget instead of a step count.
        batch_size: sequences per step.
        lr: peak AdamW learning rate; linear warmup, cosine decay to ``lr * min_lr_ratio``.
        warmup_steps: linear warmup length (in steps; in ``minutes`` mode, share of budget
            ``warmup_steps / steps``).
        min_lr_ratio: final learning rate as a share of ``lr``.
        weight_decay: AdamW decoupled weight decay.
        style_mix: share of targets per completion style (normalised).
        builtin_share: share of training prompts asked in the built-in templates; the rest are
            asked in the other trained phrasing families (``engine.tasks.phrasings``).
        noise_share: share of training prompts with a surface change (case, spacing, prefix).
        no_system_share: share of training prompts sent without the system message.
        hidden_size, num_layers, num_heads, intermediate_size, max_positions: Llama shape.
        eval_rows: held-out prompts sampled once each at the end for the model card, in the
            built-in templates and again in the held-out phrasing families (0: skip).
        eval_pass_rows, eval_pass_k: the first ``eval_pass_rows`` of each set are sampled
            ``eval_pass_k`` times for the card's pass@k (0 rows: skip).
        eval_temperature: sampling temperature of that evaluation.
        eval_max_new_tokens: completion cap of that evaluation.
        threads: torch CPU threads. One by default: the weights are then bit-identical from
            run to run whatever the core count, and on a busy machine one thread trains
            faster than two fighting for cores.
        device: where to train (``"cpu"``; ``"cuda"`` trains faster but not bit-identically).
    """

    out: Path = DEFAULT_OUT
    seed: int = 0
    steps: int = 700
    minutes: float | None = None
    batch_size: int = 32
    lr: float = 3e-3
    warmup_steps: int = 30
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.01
    style_mix: dict[str, float] = field(default_factory=lambda: dict(STYLE_MIX))
    builtin_share: float = 0.2
    noise_share: float = 0.25
    no_system_share: float = 0.1
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 256
    max_positions: int = 512
    eval_rows: int = 400
    eval_pass_rows: int = 100
    eval_pass_k: int = 8
    eval_temperature: float = 0.8
    eval_max_new_tokens: int = 96
    threads: int = 1
    device: str = "cpu"

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.minutes is not None and self.minutes <= 0:
            raise ValueError(f"minutes must be > 0, got {self.minutes}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        unknown = set(self.style_mix) - set(COMPLETION_STYLES)
        if unknown:
            raise ValueError(f"style_mix has unknown styles {sorted(unknown)}")
        if sum(self.style_mix.values()) <= 0 or min(self.style_mix.values()) < 0:
            raise ValueError("style_mix weights must be >= 0 with a positive sum")
        for name in ("builtin_share", "noise_share", "no_system_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


def model_config(tokenizer: Any, cfg: BuildConfig) -> LlamaConfig:
    """The Llama shape of the default model (tied input/output embeddings)."""
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def training_prompt(task: ArithmeticTask, rng: random.Random, cfg: BuildConfig) -> tuple:
    """(problem, chat messages) of one training example: a training-split problem asked in a
    phrasing drawn by the task (``cfg.builtin_share``, ``cfg.noise_share``), without the
    system message with probability ``cfg.no_system_share``."""
    problem = task.sample_problem(rng, "train")
    question = task.question(problem, rng, cfg.builtin_share, cfg.noise_share)
    messages = task.prompt(question)
    if rng.random() < cfg.no_system_share:
        messages = [m for m in messages if m["role"] != "system"]
    return problem, messages


def make_batch(
    task: ArithmeticTask, tokenizer: Any, rng: random.Random, cfg: BuildConfig
) -> dict[str, torch.Tensor]:
    """One right-padded batch; labels are -100 on the prompt and padding, so the loss covers
    the assistant reply and its end token only."""
    styles, weights = zip(*cfg.style_mix.items(), strict=True)
    batch_size = cfg.batch_size
    seqs, labels = [], []
    for _ in range(batch_size):
        problem, messages = training_prompt(task, rng, cfg)
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        reply = render_completion(problem, rng.choices(styles, weights)[0])
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        r_ids = tokenizer(reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        seqs.append(p_ids + r_ids)
        labels.append([-100] * len(p_ids) + r_ids)
    width = max(len(s) for s in seqs)
    input_ids = torch.full((batch_size, width), tokenizer.pad_token_id, dtype=torch.long)
    label_t = torch.full((batch_size, width), -100, dtype=torch.long)
    mask = torch.zeros((batch_size, width), dtype=torch.long)
    for i, (s, lab) in enumerate(zip(seqs, labels, strict=True)):
        input_ids[i, : len(s)] = torch.tensor(s)
        label_t[i, : len(lab)] = torch.tensor(lab)
        mask[i, : len(s)] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "labels": label_t}


def lr_factor(progress: float, warmup: float, min_ratio: float) -> float:
    """Linear warmup over ``warmup`` (a share of training), then cosine decay to ``min_ratio``."""
    if progress < warmup:
        return max(progress / warmup, 1e-3)
    t = min((progress - warmup) / max(1.0 - warmup, 1e-9), 1.0)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * t))


def train(cfg: BuildConfig) -> tuple[LlamaForCausalLM, Any, dict[str, Any]]:
    """Supervised training from scratch; returns (model, tokenizer, training stats)."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    tokenizer = build_char_tokenizer()
    tokenizer.model_max_length = cfg.max_positions
    model = LlamaForCausalLM(model_config(tokenizer, cfg)).to(cfg.device)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )
    task = ArithmeticTask(seed=cfg.seed)
    rng = random.Random(f"{cfg.seed}:sft-stream")
    warmup = cfg.warmup_steps / cfg.steps
    budget_s = cfg.minutes * 60 if cfg.minutes is not None else None

    start = time.perf_counter()
    losses: list[float] = []
    loads: list[float] = []
    step = 0
    total = None if budget_s is not None else cfg.steps
    bar = tqdm(total=total, desc="building default model", unit="step")
    while True:
        elapsed = time.perf_counter() - start
        progress = elapsed / budget_s if budget_s is not None else step / cfg.steps
        if progress >= 1.0:
            break
        factor = lr_factor(progress, warmup, cfg.min_lr_ratio)
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * factor
        batch = make_batch(task, tokenizer, rng, cfg)
        batch = {k: v.to(cfg.device) for k, v in batch.items()}
        loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        step += 1
        bar.update(1)
        if step % 10 == 0:
            loads.append(os.getloadavg()[0])
            bar.set_postfix(loss=f"{sum(losses[-10:]) / 10:.3f}", lr=f"{cfg.lr * factor:.1e}")
    bar.close()
    model.eval()
    stats = {
        "steps": step,
        "train_seconds": round(time.perf_counter() - start, 1),
        "final_loss": round(sum(losses[-20:]) / max(len(losses[-20:]), 1), 4),
        "sequences_seen": step * cfg.batch_size,
        "load_average": round(sum(loads) / len(loads), 2) if loads else None,
    }
    return model, tokenizer, stats


def save(model: LlamaForCausalLM, tokenizer: Any, out: Path) -> None:
    """``save_pretrained`` (safetensors) for weights, tokenizer and generation defaults."""
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_new_tokens=96,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def finish(
    model: Any, tokenizer: Any, cfg: BuildConfig, stats: dict[str, Any], t0: float, cpu0: float
) -> dict[str, Any]:
    """Evaluate the saved model, then write its model card and ``build_info.json``."""
    stats["parameters"] = sum(p.numel() for p in model.parameters())
    stats["vocab_size"] = len(tokenizer)
    stats.setdefault("cpu_count", os.cpu_count())
    stats.setdefault(
        "machine",
        f"{platform.machine()} CPU, {cfg.threads} torch thread{'s' if cfg.threads > 1 else ''}"
        if cfg.device == "cpu"
        else torch.cuda.get_device_name(),
    )
    evals = evaluate_model(model, tokenizer, cfg) if cfg.eval_rows > 0 else {}
    stats["total_seconds"] = round(stats.get("train_seconds", 0) + time.perf_counter() - t0, 1)
    stats["cpu_seconds"] = round(stats.get("train_cpu_seconds", 0) + time.process_time() - cpu0, 1)
    stats["disk_mb"] = sum(f.stat().st_size for f in cfg.out.iterdir() if f.is_file()) / 1e6
    (cfg.out / "README.md").write_text(model_card(cfg, stats, evals), encoding="utf-8")
    summary = {
        "config": {**asdict(cfg), "out": str(cfg.out)},
        "stats": stats,
        "eval": evals.get("builtin"),
        "evals": {k: v for k, v in evals.items() if k != "builtin"},
    }
    (cfg.out / "build_info.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    return summary


def build(cfg: BuildConfig) -> dict[str, Any]:
    """Train, save, evaluate on the held-out split and write the model card."""
    cpu0 = time.process_time()
    model, tokenizer, stats = train(cfg)
    stats["train_cpu_seconds"] = round(time.process_time() - cpu0, 1)
    save(model, tokenizer, cfg.out)
    return finish(model, tokenizer, cfg, stats, time.perf_counter(), time.process_time())


def parse_args(argv: list[str] | None = None) -> BuildConfig:
    parser = argparse.ArgumentParser(
        prog="python -m engine.builds.build_default_model", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--seed", type=int, default=0, help="seed (split, data, init)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=int, default=BuildConfig.steps, help="optimizer steps")
    budget.add_argument("--minutes", type=float, help="train for a wall-clock budget instead")
    parser.add_argument("--batch-size", type=int, default=BuildConfig.batch_size)
    parser.add_argument("--lr", type=float, default=BuildConfig.lr)
    parser.add_argument(
        "--eval-rows",
        type=int,
        default=BuildConfig.eval_rows,
        help="held-out prompts evaluated for the model card (0 skips)",
    )
    parser.add_argument("--threads", type=int, default=BuildConfig.threads)
    parser.add_argument("--device", default=BuildConfig.device, help="cpu or cuda")
    a = parser.parse_args(argv)
    return BuildConfig(
        out=a.out,
        seed=a.seed,
        steps=a.steps,
        minutes=a.minutes,
        batch_size=a.batch_size,
        lr=a.lr,
        eval_rows=a.eval_rows,
        threads=a.threads,
        device=a.device,
    )


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    summary = build(parse_args(argv))
    ev = summary["eval"]
    logger.info(
        "saved to %s in %.1f min", summary["config"]["out"], summary["stats"]["total_seconds"] / 60
    )
    if ev:
        logger.info(
            "held-out: accuracy %.1f%%, strict accuracy %.1f%%, strict format %.1f%% (n=%d)",
            100 * ev["accuracy"],
            100 * ev["strict_accuracy"],
            100 * ev["format_rate"],
            ev["n"],
        )


if __name__ == "__main__":
    main()
