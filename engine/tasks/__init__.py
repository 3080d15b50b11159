"""Built-in tasks: generated, seeded, offline.

``builtin_task(seed)`` returns the arithmetic word-problem task the default model is trained on.
Its rows ask each problem in the built-in templates; :meth:`ArithmeticTask.question` asks it in
any trained phrasing family (``engine.tasks.phrasings``) for the default model's training
stream, and :meth:`ArithmeticTask.unseen_phrasing_rows` asks held-out problems in families that
stream never uses. Rows are plain dicts, the contract every trainer and the preview use::

    {"id": "arith-train-00012",
     "prompt": [{"role": "system", "content": ...}, {"role": "user", "content": ...}],
     "answer": "14", "difficulty": 3, "key": "52-38"}
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from engine.tasks.arithmetic import (
    LEVEL_NAMES,
    LEVELS,
    Problem,
    all_problems,
    is_held_out,
)
from engine.tasks.phrasings import BUILTIN, FAMILIES, HELD_OUT_FAMILIES, Family, add_noise, render

SYSTEM_PROMPT = "Put your steps in <think></think> and the result in <answer></answer>."
# For a pretrained instruct model, which follows an example better than an instruction: one
# worked problem from seed 0's train split (13+5; tests check it is not held out) in the
# column method's own words and the reward's exact format: nothing before <think>, nothing
# after </answer>.
WORKED_EXAMPLE_SYSTEM_PROMPT = (
    "Solve the problem. Write your steps inside <think></think>, then only the final number "
    "inside <answer></answer>, and nothing else.\n"
    "Example question: Mia has 13 pens and gets 5 more. How many pens does Mia have now?\n"
    "The whole reply to it:\n"
    "<think>13+5: 3+5=8; 1+0=1; so 18</think>\n<answer>18</answer>"
)
SPLITS = ("train", "heldout")
DEFAULT_TRAIN_ROWS = 4000
DEFAULT_EVAL_ROWS = 400

__all__ = [
    "DEFAULT_EVAL_ROWS",
    "DEFAULT_TRAIN_ROWS",
    "LEVEL_NAMES",
    "SYSTEM_PROMPT",
    "WORKED_EXAMPLE_SYSTEM_PROMPT",
    "ArithmeticTask",
    "Problem",
    "builtin_task",
]


@dataclass(frozen=True)
class ArithmeticTask:
    """Arithmetic word problems with a seeded train/held-out split by problem.

    Attributes:
        seed: drives the split, the wording and the row order.
        held_out_share: share of problems (per level) never shown in training.
        system_prompt: system message of every prompt; "" leaves it out.
    """

    seed: int = 0
    held_out_share: float = 0.1
    system_prompt: str = SYSTEM_PROMPT
    name: str = field(default="arithmetic", init=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.held_out_share < 1.0:
            raise ValueError(f"held_out_share must be in (0, 1), got {self.held_out_share}")

    @cached_property
    def _pools(self) -> dict[str, dict[int, list[Problem]]]:
        pools: dict[str, dict[int, list[Problem]]] = {s: {} for s in SPLITS}
        for level in LEVELS:
            problems = all_problems(level)
            held = [is_held_out(p.key, self.seed, self.held_out_share) for p in problems]
            pools["heldout"][level] = [p for p, h in zip(problems, held, strict=True) if h]
            pools["train"][level] = [p for p, h in zip(problems, held, strict=True) if not h]
        return pools

    def problems(self, split: str, level: int) -> list[Problem]:
        """All problems of one split and level, in a fixed order."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level}")
        return self._pools[split][level]

    def sample_problem(self, rng: random.Random, split: str = "train") -> Problem:
        """A problem drawn evenly over levels, then evenly within the level's split."""
        return rng.choice(self.problems(split, rng.choice(LEVELS)))

    def prompt(self, question: str) -> list[dict[str, str]]:
        """Chat messages for one question."""
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*messages, {"role": "user", "content": question}]

    def question(
        self,
        problem: Problem,
        rng: random.Random,
        builtin_share: float = 0.2,
        noise_share: float = 0.25,
        families: tuple[Family, ...] = FAMILIES,
    ) -> str:
        """``problem`` in a phrasing drawn from ``rng``: the built-in templates with probability
        ``builtin_share``, else one of the other ``families`` that can ask it (evenly), then a
        surface change (:func:`add_noise`) with probability ``noise_share``."""
        others = [f for f in families if f is not BUILTIN and f.choices(problem.ops)]
        if rng.random() < builtin_share or not others:
            text = problem.question(rng)
        else:
            text = render(rng.choice(others), problem, rng)
        return add_noise(text, rng) if rng.random() < noise_share else text

    def make_row(
        self, problem: Problem, rng: random.Random, row_id: str, question: str | None = None
    ) -> dict[str, Any]:
        return {
            "id": row_id,
            "prompt": self.prompt(problem.question(rng) if question is None else question),
            "answer": str(problem.answer),
            "difficulty": problem.level,
            "key": problem.key,
        }

    def train_rows(self, n: int = DEFAULT_TRAIN_ROWS) -> list[dict[str, Any]]:
        """``n`` training rows, levels in equal shares, problems drawn with replacement."""
        rng = random.Random(f"{self.seed}:train-rows")
        return [
            self.make_row(self.sample_problem(rng, "train"), rng, f"arith-train-{i:05d}")
            for i in range(n)
        ]

    def eval_rows(self, n: int | None = None) -> list[dict[str, Any]]:
        """``n`` held-out rows (default 400), levels in turn, each level's problems shuffled
        and cycled so every held-out problem appears before any repeats."""
        rng = random.Random(f"{self.seed}:heldout-rows")
        problems = self._heldout_sequence(n, rng)
        return [self.make_row(p, rng, f"arith-heldout-{i:05d}") for i, p in enumerate(problems)]

    def unseen_phrasing_rows(
        self, n: int | None = None, noise_share: float = 0.25
    ) -> list[dict[str, Any]]:
        """The ``n`` held-out problems of :meth:`eval_rows`, in the same order, asked in the
        held-out phrasing families, which the default model's training never uses: a measure of
        how its reading generalises. Each row also names its ``family``."""
        problems = self._heldout_sequence(n, random.Random(f"{self.seed}:heldout-rows"))
        rng = random.Random(f"{self.seed}:unseen-phrasing-rows")
        rows = []
        for i, problem in enumerate(problems):
            families = [f for f in HELD_OUT_FAMILIES if f.choices(problem.ops)]
            family = families[(i // len(LEVELS)) % len(families)]
            text = render(family, problem, rng)
            text = add_noise(text, rng) if rng.random() < noise_share else text
            row = self.make_row(problem, rng, f"arith-unseen-{i:05d}", question=text)
            rows.append({**row, "family": family.name})
        return rows

    def _heldout_sequence(self, n: int | None, rng: random.Random) -> list[Problem]:
        """Levels in turn, each level's held-out problems shuffled by ``rng`` and cycled."""
        n = DEFAULT_EVAL_ROWS if n is None else n
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        orders = {}
        for level in LEVELS:
            order = list(self.problems("heldout", level))
            rng.shuffle(order)
            orders[level] = order
        problems = []
        for i in range(n):
            order = orders[LEVELS[i % len(LEVELS)]]
            problems.append(order[(i // len(LEVELS)) % len(order)])
        return problems


def builtin_task(seed: int = 0) -> ArithmeticTask:
    """The built-in arithmetic task with the default held-out share and system prompt."""
    return ArithmeticTask(seed=seed)
