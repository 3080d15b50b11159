"""A small batch of varied completions in groups, and random specs over the rule-based
components, shared by the reward lab's tests."""

from __future__ import annotations

import random

from rewards.lab.batch import Generations
from rewards.spec import ComponentSpec, RewardSpec

#: Components that score by rule (no model, no user code).
RULE_BASED = (
    "correctness",
    "format",
    "reasoning_steps",
    "repetition",
    "conciseness",
    "relative_length",
    "language",
    "code_format",
    "similarity",
    "rule",
)

_FORMS = (
    "<think>{a} + {b} = {c}</think><answer>{c}</answer>",
    "<think>First, {a} plus {b}. Next, carry. Finally, {c}.</think><answer>{c}</answer>",
    "The answer is {c}",
    "<answer>{c}</answer>",
    "<think>{a} + {b} is {c} {c} {c} is {c} is {c}</think> so {c}",
    "Step 1: add {a} and {b}. Step 2: the sum is {c}. As an AI language model I say {c}.",
    "```python\nprint({a} + {b})\n```\n<answer>{c}</answer>",
    "",
)


def generations(groups: int = 6, per_group: int = 4, seed: int = 0) -> Generations:
    """``groups`` prompts, ``per_group`` completions each: right and wrong answers in many
    formats, one empty completion now and then (so some components cannot score)."""
    rng = random.Random(seed)
    prompts, completions, answers, groups_of, ids = [], [], [], [], []
    for g in range(groups):
        a, b = rng.randint(1, 60), rng.randint(1, 40)
        for _ in range(per_group):
            c = a + b if rng.random() < 0.5 else a + b + rng.choice((-1, 1, 10))
            text = rng.choice(_FORMS).format(a=a, b=b, c=c)
            prompts.append(f"What is {a} + {b}?")
            completions.append(text)
            answers.append(str(a + b))
            groups_of.append(g)
            ids.append([ord(ch) % 97 for ch in text])
    return Generations(prompts, completions, groups_of, answers, ids)


def random_spec(rng: random.Random, size: int | None = None) -> RewardSpec:
    """A spec of ``size`` distinct rule-based components (2-5 by default), random weights."""
    names = rng.sample(RULE_BASED, size or rng.randint(2, 5))
    comps = []
    for name in names:
        params: dict = {}
        if name == "similarity":
            params = {"metric": rng.choice(("rouge_l", "chrf"))}
        elif name == "conciseness":
            params = {"unit": rng.choice(("tokens", "characters")), "max_len": 120}
        elif name == "format":
            params = {"mode": rng.choice(("strict", "soft", "pairs"))}
        comps.append(ComponentSpec(name, round(rng.uniform(-2, 2), 3), params))
    return RewardSpec(comps)
