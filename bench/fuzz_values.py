"""The values ``bench/fuzz_endpoints.py`` sends: hostile ones of every JSON shape, and plausible
ones per parameter (a spec that parses, a run id, a config that starts), so the hostile part of
a call meets the checks past the first argument."""

from __future__ import annotations

import json
import random
from typing import Any

SPEC = json.dumps({"components": [{"name": "format"}, {"name": "length"}]})
MATH_SPEC = json.dumps({"components": [{"name": "correctness", "params": {"mode": "math"}}]})
TEXTS = [
    "",
    "\x00",
    "\ud800",  # a lone surrogate
    "\u202egnp.exe",
    "a" * 25_000,
    "<think>x</think><answer>42</answer>",
    "\\frac{1}{0}",
    "$" * 500,
    "{" * 2_000,
    "[" * 2_000 + "]" * 2_000,
    "a: &a [*a, *a, *a, *a]",  # a YAML alias
    "!!python/object/apply:os.system ['true']",
    "../../../../etc/passwd",
    "/proc/self/environ",
    "http://169.254.169.254/latest/meta-data/",
    "%s%n%x",
    "' OR 1=1 --",
    "null",
    "NaN",
    "1e309",
    "-0",
    "🙂" * 100,
    "x\ny\r\nz",
]
NUMBERS = [0, -1, 1, 2**31, 2**63, -(2**63), 10**400, 1.5, -0.0, 1e308, True, False]
STRUCTURES = [
    None,
    [],
    {},
    [None],
    [[[[[[[[[[[]]]]]]]]]]],
    {"__proto__": {"x": 1}},
    {"role": "assistant", "content": None},
    [{"role": "assistant", "content": "hi", "tool_calls": ["x"]}],
    [{"role": "tool", "content": {"nested": [1, 2]}}],
    list(range(300)),
    ["a"] * 300,
    {"components": "format"},
    {"components": [{"name": "python", "params": {"path": "/etc/passwd"}}]},
    {"model": {"name_or_path": "/"}},
    {"data": {"source": "file", "path": "/etc/passwd"}},
    {"temperature": -1, "max_new_tokens": 10**9},
]
CONFIGS = [
    json.dumps({"training": {"steps": 1, "prompts_per_step": 2, "eval_samples": 0}}),
    "training: {steps: 1, prompts_per_step: 2}\nname: fuzz",
    json.dumps({"name": "x", "algorithm": "ppo", "training": {"steps": 1}}),
    json.dumps({"model": {"name_or_path": "gpt2"}}),
]


def hostile(rng: random.Random, name: str, kind: str) -> Any:
    """A value of any shape, most of them wrong for ``kind``."""
    pool = rng.choice((TEXTS, NUMBERS, STRUCTURES))
    value = rng.choice(pool)
    if rng.random() < 0.2:  # inside a list, where the parameter takes one
        return [value, rng.choice(TEXTS)]
    return value


def plausible(rng: random.Random, name: str, kind: str) -> Any:
    """A value of the parameter's type that its checks may accept."""
    if name in ("spec",):
        return rng.choice((SPEC, MATH_SPEC))
    if name == "specs":
        return [SPEC, MATH_SPEC][: rng.choice((1, 2))] * rng.choice((1, 2))
    if name == "config":
        return rng.choice(CONFIGS)
    if name == "run_id":
        return rng.choice(("busy-slot", "grpo-00000000", "x" * 64))
    if name in ("completions", "prompts", "answers"):
        n = rng.choice((2, 3, 8))
        return [rng.choice(TEXTS[:12]) for _ in range(n)]
    if name == "groups":
        return [rng.randrange(0, 3) for _ in range(rng.choice((2, 3, 8)))]
    if name == "cursor":
        return rng.choice((0, 5, -1))
    if name == "names":
        return rng.choice((["reward/total"], [], None))
    if name == "settings":
        return rng.choice(({"temperature": 0.7, "max_new_tokens": 4}, {}, None))
    if name in ("format", "quant", "scale_rewards", "model"):
        return rng.choice(("hf", "gguf", "q8_0", "group", "batch", "none", "final", ""))
    if kind == "str":
        return rng.choice(TEXTS)
    return None
