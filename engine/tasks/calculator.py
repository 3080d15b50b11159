"""The built-in agent task: multi-digit products where calling the calculator pays.

A product of a two- or three-digit number and a two-digit one (``347 * 29``), asked as a bare
expression or in a short story. The shipped models compute one-digit facts and the column method
for sums (``engine.tasks.arithmetic``) but no multi-digit product in their heads, so a rollout
that calls the calculator (``<tool_call>{"name": "calculator", "arguments": {"expression":
"347*29"}}</tool_call>``) and copies its result into ``<answer></answer>`` is right where one that
answers at once is almost always wrong: the reward pays calls by their outcome.

The held-out split is by problem, as the arithmetic task's: a problem's key (``"347*29"``) is
held out when a seeded hash of it falls in the held-out share (:func:`is_held_out`), so no
held-out product is asked in training under any wording. Rows are the shared row format::

    {"id": "calc-train-00012", "prompt": [system, user], "answer": "10063",
     "difficulty": 3, "key": "347*29"}

``difficulty`` is the digit count of the first factor plus one for a story (1: two digits, bare;
2: three digits, bare, or two digits in a story; 3: three digits in a story).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from engine.tasks.arithmetic import ITEMS, NAMES, is_held_out

SYSTEM_PROMPT = "Use the calculator for arithmetic, then put the result in <answer></answer>."
DEFAULT_TRAIN_ROWS = 4000
DEFAULT_EVAL_ROWS = 200
SPLITS = ("train", "heldout")

# {a} {b} the factors; {n} a name, {i} an item (plural).
BARE = (
    "What is {a} * {b}?",
    "Compute {a} * {b}.",
    "What is {a} times {b}?",
    "Multiply {a} by {b}.",
)
STORIES = (
    "{n} has {b} boxes of {a} {i}. How many {i} in all?",
    "There are {a} {i} in each of {b} bags. How many {i} are there?",
    "{n} buys {b} packs with {a} {i} each. How many {i} does {n} get?",
)


@dataclass(frozen=True)
class Product:
    """One problem: ``a * b``, asked bare or as a story."""

    a: int
    b: int

    @property
    def key(self) -> str:
        return f"{self.a}*{self.b}"

    @property
    def answer(self) -> int:
        return self.a * self.b


@dataclass(frozen=True)
class CalculatorTask:
    """Multi-digit products with a seeded train/held-out split by problem.

    Attributes:
        seed: drives the split, the wording and the row order.
        held_out_share: share of problems never shown in training.
        story_share: share of questions asked as a story rather than a bare expression.
        system_prompt: system message of every prompt; "" leaves it out.
    """

    seed: int = 0
    held_out_share: float = 0.1
    story_share: float = 0.3
    system_prompt: str = SYSTEM_PROMPT
    name: str = field(default="calculator", init=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.held_out_share < 1.0:
            raise ValueError(f"held_out_share must be in (0, 1), got {self.held_out_share}")
        if not 0.0 <= self.story_share <= 1.0:
            raise ValueError(f"story_share must be in [0, 1], got {self.story_share}")

    def sample_problem(self, rng: random.Random, split: str = "train") -> Product:
        """A product drawn until it falls in ``split``: the first factor 10-999 (two or three
        digits evenly), the second 11-99."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        while True:
            a = rng.randint(10, 99) if rng.random() < 0.5 else rng.randint(100, 999)
            problem = Product(a, rng.randint(11, 99))
            held = is_held_out(problem.key, self.seed, self.held_out_share)
            if held == (split == "heldout"):
                return problem

    def question(self, problem: Product, rng: random.Random) -> tuple[str, bool]:
        """``problem`` in a wording drawn from ``rng``, and whether it is a story."""
        story = rng.random() < self.story_share
        template = rng.choice(STORIES if story else BARE)
        text = template.format(a=problem.a, b=problem.b, n=rng.choice(NAMES), i=rng.choice(ITEMS))
        return text, story

    def prompt(self, question: str) -> list[dict[str, str]]:
        """Chat messages for one question."""
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*messages, {"role": "user", "content": question}]

    def make_row(self, problem: Product, rng: random.Random, row_id: str) -> dict[str, Any]:
        text, story = self.question(problem, rng)
        return {
            "id": row_id,
            "prompt": self.prompt(text),
            "answer": str(problem.answer),
            "difficulty": len(str(problem.a)) - 1 + int(story),
            "key": problem.key,
        }

    def train_rows(self, n: int = DEFAULT_TRAIN_ROWS) -> list[dict[str, Any]]:
        """``n`` training rows, problems drawn with replacement."""
        rng = random.Random(f"{self.seed}:calc-train-rows")
        return [
            self.make_row(self.sample_problem(rng, "train"), rng, f"calc-train-{i:05d}")
            for i in range(n)
        ]

    def eval_rows(self, n: int | None = None) -> list[dict[str, Any]]:
        """``n`` held-out rows (default 200), the same ones for a seed whatever ``n``."""
        n = DEFAULT_EVAL_ROWS if n is None else n
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        rng = random.Random(f"{self.seed}:calc-heldout-rows")
        return [
            self.make_row(self.sample_problem(rng, "heldout"), rng, f"calc-heldout-{i:05d}")
            for i in range(n)
        ]
