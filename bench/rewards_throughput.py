"""Reward throughput: completions scored per second with every component on.

Scores 10,000 realistic completions (built-in-task style, strict and loose formats, and English
prose with step markers, boxed or GSM8K answers, some repetitive, some in German) in groups of 8
under the "hand-tuned GRPO script" preset plus one ``rule`` component, through
``rewards.composer.score`` in training-sized batches, with token ids given (character ids, as the
built-in model's tokenizer makes them). The math-verify workers and the language model are
warmed up on other completions first; the answer cache starts empty.

Prints completions/s (wall clock), the main process's CPU time and the machine's load average
(other work on the machine slows the wall clock), and each component's share of the time
(components timed separately on the same batches). The last line is one JSON object.

Usage: ``python bench/rewards_throughput.py [--n 10000] [--batch-size 128]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewards.completions.text import completion_texts
from rewards.components.base import BatchContext
from rewards.composer import score
from rewards.spec import ComponentSpec, RewardSpec, preset
from rewards.verification import verify

GROUP = 8

PROSE_OPENERS = [
    "Let me work through this carefully.",
    "We need to find the result of the operation.",
    "I will solve this step by step.",
    "Okay, so the question asks for a simple calculation.",
]
GERMAN = "Zuerst rechne ich die Einer aus. Dann rechne ich die Zehner aus. Das Ergebnis ist"


def procedure(a: int, b: int, op: str) -> tuple[str, int]:
    """The built-in task's digit-by-digit working and the true result."""
    result = a + b if op == "+" else a - b
    steps = []
    da, db = str(a)[::-1], str(b)[::-1]
    carry = 0
    for i in range(max(len(da), len(db))):
        x = int(da[i]) if i < len(da) else 0
        y = int(db[i]) if i < len(db) else 0
        if op == "+":
            s = x + y + carry
            steps.append(f"{x}+{y}{'+1' if carry else ''}={s}")
            carry = s // 10
        else:
            steps.append(f"{x}-{y}={x - y}")
    return "; ".join(steps), result


def make_group(rng: random.Random) -> tuple[str, str, list[str]]:
    """One prompt, its gold answer and 8 completions."""
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    op = rng.choice("+-")
    if op == "-" and b > a:
        a, b = b, a
    work, result = procedure(a, b, op)
    prompt = f"{a}{op}{b}"
    completions = []
    for _ in range(GROUP):
        answer = result if rng.random() < 0.5 else result + rng.choice([-10, -1, 1, 10])
        kind = rng.random()
        if kind < 0.45:  # built-in task, strict format
            text = f"<think>{prompt}: {work}; so {answer}</think><answer>{answer}</answer>"
        elif kind < 0.55:  # loose: answer after the think block
            text = f"<think>{prompt}: {work}</think> The answer is {answer}"
        elif kind < 0.6:  # no tags at all
            text = f"{prompt}: {work}; so {answer}"
        else:  # English prose
            opener = rng.choice(PROSE_OPENERS)
            body = (
                f"{opener} First, I look at the ones digits of {a} and {b}. "
                f"Next, I handle the tens digits and any carry. "
                f"Finally, I combine the digits to get {answer}."
            )
            style = rng.random()
            if style < 0.3:
                text = f"<think>{body}</think><answer>{answer}</answer>"
            elif style < 0.5:
                text = f"{body}\nSo the final answer is \\boxed{{{answer}}}."
            elif style < 0.65:
                text = f"{body}\n#### {answer}"
            elif style < 0.8:
                text = f"{body} Therefore the answer is {answer}."
            elif style < 0.9:
                text = f"{body} {body} I am sure the answer is {answer}."
            else:
                text = f"{GERMAN} {answer}. {body}"
        completions.append(text)
    return prompt, str(result), completions


def make_dataset(n: int, seed: int) -> tuple[list[str], list[str], list[str], list[int]]:
    rng = random.Random(seed)
    prompts, answers, completions, groups = [], [], [], []
    g = 0
    while len(completions) < n:
        prompt, gold, group = make_group(rng)
        for c in group:
            prompts.append(prompt)
            answers.append(gold)
            completions.append(c)
            groups.append(g)
        g += 1
    return prompts[:n], answers[:n], completions[:n], groups[:n]


def bench_spec() -> RewardSpec:
    spec = preset("hand-tuned GRPO script")
    spec.components.append(
        ComponentSpec("rule", -0.2, {"pattern": "sorry|apologi[sz]e", "effect": "penalty"})
    )
    spec.validate()
    return spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    spec = bench_spec()
    prompts, answers, completions, _ = make_dataset(args.n, args.seed)
    ids = [[ord(ch) % 256 for ch in c] for c in completions]

    # Warm-up on different completions: starts math-verify workers, loads the language model.
    w_prompts, w_answers, w_completions, _ = make_dataset(256, args.seed + 1)
    score(spec, w_prompts, w_completions, answers=w_answers)
    verify._cache.clear()

    batches = range(0, args.n, args.batch_size)
    load_before = os.getloadavg()[0]
    cpu_start = time.process_time()
    start = time.perf_counter()
    for lo in batches:
        hi = lo + args.batch_size
        score(spec, prompts[lo:hi], completions[lo:hi], answers[lo:hi], ids[lo:hi])
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    load_after = os.getloadavg()[0]
    rate = args.n / elapsed

    # Per-component time, on the same batches with a fresh answer cache.
    verify._cache.clear()
    built = spec.build()
    per_component = {fn.__name__: 0.0 for fn, _ in built}
    for lo in batches:
        hi = lo + args.batch_size
        texts = completion_texts(completions[lo:hi])
        ctx = BatchContext(len(texts), prompts[lo:hi], ids[lo:hi], {"answer": answers[lo:hi]})
        for fn, _ in built:
            t0 = time.perf_counter()
            fn.judge(texts, ctx)
            per_component[fn.__name__] += time.perf_counter() - t0
    component_total = sum(per_component.values())

    print(f"completions: {args.n}  batch size: {args.batch_size}  cpus: {os.cpu_count()}")
    print(f"scored in {elapsed:.2f} s: {rate:,.0f} completions/s")
    print(
        f"main-process CPU {cpu:.2f} s (math-verify workers not counted); "
        f"load average {load_before:.1f} before, {load_after:.1f} after"
    )
    print("time share by component:")
    for name, seconds in sorted(per_component.items(), key=lambda kv: -kv[1]):
        print(f"  {name:16s} {seconds / component_total:6.1%}  ({seconds:.2f} s)")
    print(
        json.dumps(
            {
                "completions": args.n,
                "batch_size": args.batch_size,
                "elapsed_s": round(elapsed, 3),
                "completions_per_s": round(rate, 1),
                "main_process_cpu_s": round(cpu, 3),
                "load_average_1min": [round(load_before, 2), round(load_after, 2)],
                "component_time_share": {
                    k: round(v / component_total, 4) for k, v in per_component.items()
                },
                "component_time_s": {k: round(v, 3) for k, v in per_component.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
