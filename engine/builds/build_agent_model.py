"""Build the shipped agent model: the default model taught to call the calculator, sometimes.

    python -m engine.builds.build_agent_model [--out DIR] [--seed S] [--steps N]

Supervised fine-tuning of the shipped default model (``engine/models/default_model``, not from
random weights) on the built-in agent task (:mod:`engine.tasks.calculator`), prompts rendered
with the calculator's tool line as a run with ``tools: {builtin: [calculator]}`` renders them.
The first reply's target is drawn from :data:`FIRST_TURN_MIX`: a well-formed call, an answer
from its head (the product itself, which a 0.7M-parameter model cannot compute, so it learns to
write a plausible number), or a malformed call (not JSON, or a tool that does not exist). After
a tool result the target copies it into ``<answer></answer>``; after an error it guesses.

So the shipped agent model calls the calculator in about half its rollouts before any RL, and
RL has both sides of the choice to compare: a group of rollouts where the callers are right
and the guessers wrong is what GRPO's advantage rewards. Deterministic for a seed and thread
count on one machine; the model card (README.md) reports the held-out evaluation through the
tool loop (:mod:`engine.tracking.tool_evaluation`) measured at the end of the build.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from engine.builds.build_default_model import lr_factor, save
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks.calculator import CalculatorTask, Product
from engine.tools.toolbox import toolbox_class

logger = logging.getLogger(__name__)

DEFAULT_OUT = Path(__file__).resolve().parent / "agent_model"
#: Share of first replies per kind: a well-formed call, an answer from its head, a malformed
#: call. About half call, so RL starts where both choices are common in a group.
FIRST_TURN_MIX = {"call": 0.45, "head": 0.4, "not_json": 0.08, "unknown_tool": 0.07}
#: Share of training examples that are the reply after a tool result (the rest: first replies).
AFTER_RESULT_SHARE = 0.35


@dataclass
class AgentBuildConfig:
    """Everything that determines the built agent model.

    Attributes:
        out: output folder (weights, tokenizer, README.md, build_info.json).
        seed: seeds the data stream and the task split (the agent task's held-out problems are
            never trained on).
        steps, batch_size, lr, warmup_steps, min_lr_ratio: AdamW from the default model's
            weights; linear warmup then cosine decay to ``lr * min_lr_ratio``.
        first_turn_mix: share of first replies per kind (:data:`FIRST_TURN_MIX`).
        after_result_share: share of examples that are the reply after a tool result.
        eval_rows: held-out rows evaluated through the tool loop for the card (0: skip).
        eval_temperature, eval_max_new_tokens: that evaluation's sampling.
        threads: torch CPU threads (one: bit-identical weights whatever the core count).
    """

    out: Path = DEFAULT_OUT
    seed: int = 0
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    warmup_steps: int = 20
    min_lr_ratio: float = 0.1
    first_turn_mix: dict[str, float] = field(default_factory=lambda: dict(FIRST_TURN_MIX))
    after_result_share: float = AFTER_RESULT_SHARE
    eval_rows: int = 200
    eval_temperature: float = 0.8
    eval_max_new_tokens: int = 192
    threads: int = 1

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be >= 1")
        if set(self.first_turn_mix) - set(FIRST_TURN_MIX):
            raise ValueError(f"first_turn_mix keys must be among {sorted(FIRST_TURN_MIX)}")
        if not 0.0 <= self.after_result_share <= 1.0:
            raise ValueError("after_result_share must be in [0, 1]")


def _call(name: str, expression: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": {"expression": expression}}}


def example(
    task: CalculatorTask, rng: random.Random, cfg: AgentBuildConfig
) -> tuple[list[dict[str, Any]], str]:
    """(chat messages up to the reply, the reply's target text) of one training example."""
    problem: Product = task.sample_problem(rng, "train")
    messages = task.prompt(task.question(problem, rng)[0])
    expression = f"{problem.a}*{problem.b}" if rng.random() < 0.7 else f"{problem.a} * {problem.b}"
    if rng.random() < cfg.after_result_share:
        if rng.random() < 0.85:  # the result came back: copy it
            messages += [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_call("calculator", expression)],
                },
                {"role": "tool", "name": "calculator", "content": str(problem.answer)},
            ]
        else:  # the call failed: answer from its head
            messages += [
                {"role": "assistant", "content": "", "tool_calls": [_call("calc", expression)]},
                {"role": "tool", "name": "calc", "content": str({"error": "Tool calc not found."})},
            ]
        return messages, f"<answer>{problem.answer}</answer>"
    kinds, weights = zip(*cfg.first_turn_mix.items(), strict=True)
    kind = rng.choices(kinds, weights)[0]
    if kind == "call":
        body = json.dumps(_call("calculator", expression)["function"])
    elif kind == "unknown_tool":
        body = json.dumps(_call("calc", expression)["function"])
    elif kind == "not_json":
        body = f"calculator({expression})"
    else:
        return messages, f"<answer>{problem.answer}</answer>"
    return messages, f"<tool_call>{body}</tool_call>"


def make_batch(
    task: CalculatorTask,
    tokenizer: Any,
    tools: list[Any],
    rng: random.Random,
    cfg: AgentBuildConfig,
) -> dict[str, torch.Tensor]:
    """One right-padded batch; the loss covers the reply and its end token only."""
    seqs, labels = [], []
    for _ in range(cfg.batch_size):
        messages, reply = example(task, rng, cfg)
        prompt = tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=True
        )
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        r_ids = tokenizer(reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        seqs.append(p_ids + r_ids)
        labels.append([-100] * len(p_ids) + r_ids)
    width = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
    label_t = torch.tensor([lab + [-100] * (width - len(lab)) for lab in labels])
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
    return {"input_ids": input_ids, "attention_mask": mask, "labels": label_t}


def train(cfg: AgentBuildConfig) -> tuple[Any, Any, dict[str, Any]]:
    """Fine-tune the default model; returns (model, tokenizer, training stats)."""
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    model, tokenizer = load_model_and_tokenizer(ModelSpec(dtype="float32"), device="cpu")
    tools = [toolbox_class(["calculator"], 4)().calculator]
    task = CalculatorTask(seed=cfg.seed)
    rng = random.Random(f"{cfg.seed}:agent-sft-stream")
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95))
    model.train()
    start, losses = time.perf_counter(), []
    for step in range(cfg.steps):
        factor = lr_factor(step / cfg.steps, cfg.warmup_steps / cfg.steps, cfg.min_lr_ratio)
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * factor
        loss = model(**make_batch(task, tokenizer, tools, rng, cfg)).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % 50 == 0:
            logger.info("step %d: loss %.4f", step + 1, sum(losses[-50:]) / 50)
    model.eval()
    stats = {
        "steps": cfg.steps,
        "train_seconds": round(time.perf_counter() - start, 1),
        "final_loss": round(sum(losses[-20:]) / len(losses[-20:]), 4),
        "load_average": round(os.getloadavg()[0], 2),
        "machine": f"{platform.machine()} CPU, {cfg.threads} torch thread(s), "
        f"{os.cpu_count()} cores",
    }
    return model, tokenizer, stats


def evaluate(model: Any, tokenizer: Any, cfg: AgentBuildConfig) -> dict[str, Any]:
    """The held-out evaluation through the tool loop (what a run's evaluation measures)."""
    from engine.tools.template import prepare_tool_tokenizer
    from engine.tracking.tool_evaluation import evaluate_with_tools

    prepare_tool_tokenizer(tokenizer, "the agent model")
    rows = CalculatorTask(seed=cfg.seed).eval_rows(cfg.eval_rows)
    report = evaluate_with_tools(
        model,
        tokenizer,
        rows,
        toolbox_class(["calculator"], 2),
        temperature=cfg.eval_temperature,
        max_new_tokens=cfg.eval_max_new_tokens,
        seed=cfg.seed,
    )
    return report.to_dict()


CARD = """# Reward Studio agent model

The shipped default model (`engine/models/default_model`) fine-tuned to call the calculator
on the built-in agent task (`data: {{source: builtin, task: calculator}}`: multi-digit
products, `engine.tasks.calculator`), so an agent run on a CPU has calls to reinforce from its
first step. Use it as `model: {{name_or_path: agent}}` with `tools: {{builtin: [calculator]}}`
(`python -m engine export-config run.yaml --task agent` writes that config).

Its habits are set on purpose to leave reinforcement learning room to work: the first replies
of its training targets were a well-formed call ({call:.0%}), an answer from its head ({head:.0%};
a 0.7M-parameter model cannot multiply 347 by 29, so these are nearly always wrong) or a
malformed call ({bad:.0%}: not JSON, or a tool named `calc` that does not exist). After a result it
copies it into `<answer></answer>`.

## Build

```
{command}
```

Provenance: {steps} AdamW steps of {batch} examples from the default model's weights (lr {lr},
warmup {warmup}, cosine to {min_ratio:.0%}), loss on the replies only, seed {seed}, final loss
{final_loss}; {seconds:.0f} s of training on {machine} (1-minute load average {load} at its end:
the machine was shared with other jobs). Deterministic for a seed and thread count on a given
machine and torch build.

## Held-out evaluation through the tool loop

{n} held-out problems (`CalculatorTask({seed}).eval_rows({n})`, never trained on), one rollout
each through TRL's tool loop as a run samples it (`engine.tools.rollout`), temperature
{temperature}, at most {max_tokens} new tokens, calculator budget 2. Shares of rollouts: right
final answer; a parsed call; a useful call (its result is the gold answer); a malformed call;
a call that came back as an error.

| accuracy | called | useful call | malformed | failed call |
|---|---|---|---|---|
| {accuracy:.1%} | {call_rate:.1%} | {useful_call_rate:.1%} | {malformed_rate:.1%} | {failed:.1%} |
"""


def model_card(cfg: AgentBuildConfig, stats: dict[str, Any], ev: dict[str, Any]) -> str:
    """The README.md written next to the weights (``ev`` from :func:`evaluate`)."""
    mix = cfg.first_turn_mix
    total = sum(mix.values())
    command = f"python -m engine.builds.build_agent_model --seed {cfg.seed} --steps {cfg.steps}"
    if cfg.eval_rows != AgentBuildConfig.eval_rows:
        command += f" --eval-rows {cfg.eval_rows}"
    text = CARD.format(
        call=mix.get("call", 0) / total,
        head=mix.get("head", 0) / total,
        bad=(mix.get("not_json", 0) + mix.get("unknown_tool", 0)) / total,
        command=command,
        steps=stats["steps"],
        batch=cfg.batch_size,
        lr=cfg.lr,
        warmup=cfg.warmup_steps,
        min_ratio=cfg.min_lr_ratio,
        seed=cfg.seed,
        final_loss=stats["final_loss"],
        seconds=stats["train_seconds"],
        machine=stats["machine"],
        load=stats["load_average"],
        temperature=cfg.eval_temperature,
        max_tokens=cfg.eval_max_new_tokens,
        failed=ev["failed_call_rate"],
        **ev,
    )
    return text


def build(cfg: AgentBuildConfig) -> dict[str, Any]:
    """Train, save, evaluate on the held-out split and write the model card."""
    model, tokenizer, stats = train(cfg)
    save(model, tokenizer, cfg.out)
    ev = evaluate(model, tokenizer, cfg) if cfg.eval_rows else {}
    stats["disk_mb"] = round(sum(f.stat().st_size for f in cfg.out.iterdir()) / 1e6, 2)
    if ev:
        (cfg.out / "README.md").write_text(model_card(cfg, stats, ev), encoding="utf-8")
    summary = {"config": {**asdict(cfg), "out": str(cfg.out)}, "stats": stats, "eval": ev}
    (cfg.out / "build_info.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    return summary


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(
        prog="python -m engine.builds.build_agent_model", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=AgentBuildConfig.steps)
    parser.add_argument("--eval-rows", type=int, default=AgentBuildConfig.eval_rows)
    a = parser.parse_args(argv)
    summary = build(AgentBuildConfig(out=a.out, seed=a.seed, steps=a.steps, eval_rows=a.eval_rows))
    logger.info("saved to %s: %s", summary["config"]["out"], summary["eval"])


if __name__ == "__main__":
    main()
