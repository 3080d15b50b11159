"""Synthetic arithmetic word problems: the built-in task of Reward Studio.

Four difficulty levels, all addition and subtraction with non-negative results:

====  ==========================================================  ==========================
lvl   problem                                                     worked solution (``think``)
====  ==========================================================  ==========================
1     one step, both numbers 0-9                                  ``7+5=12; so 12``
2     one step, larger number 10-19                               ``13+5: 3+5=8; 1+0=1; so 18``
3     one step, larger number 20-99                               ``52-38: 12-8=4, borrow 1;
                                                                  5-1-3=1; so 14``
4     two steps on numbers 1-9, each step a one-digit fact        ``7+5=12; 12-4=8; so 8``
====  ==========================================================  ==========================

The worked solution is the schoolbook column method, one column per step, ones first, with
carries and borrows written out. Every column is a *digit fact*: a sum of two digits (plus a
carry) or its inverse, a difference ``t-d`` with ``t <= 18``, ``d <= 9`` and a one-digit result.
A model that learns the procedure can solve pairs it has never seen, which is what lets
reinforcement learning on training problems carry over to held-out ones.

The held-out split is by *problem*, not by wording: a problem's key (``"52-38"``,
``"7+5-4"``) is held out when a seeded hash of it falls in the held-out share, so no held-out
problem is ever seen in training under any wording.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import cached_property

NAMES = ("Ana", "Ben", "Mia", "Sam", "Leo", "Zoe", "Tom", "Eva")
ITEMS = ("apples", "pens", "cards", "coins", "books", "shells", "stamps", "marbles")

# One sentence per operation sequence; {n} name, {i} item (plural), {ia} item after {a}
# (singular when a is 1), {a} {b} {c} numbers.
TEMPLATES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("+",): (
        "{n} has {a} {ia} and gets {b} more. How many {i} does {n} have now?",
        "{n} had {a} {ia}. A friend gave {n} {b} more. How many {i} now?",
        "There are {a} {ia} in a box and {b} in a bag. How many {i} in all?",
    ),
    ("-",): (
        "{n} has {a} {ia} and gives away {b}. How many {i} are left?",
        "{n} had {a} {ia} and lost {b}. How many {i} does {n} have now?",
        "There were {a} {ia} on a shelf. {n} took {b}. How many are left?",
    ),
    ("+", "-"): ("{n} has {a} {ia}, gets {b} more, then gives away {c}. How many {i} now?",),
    ("-", "+"): ("{n} has {a} {ia}, gives away {b}, then gets {c} more. How many {i} now?",),
    ("+", "+"): ("{n} has {a} {ia}, gets {b} more, then {c} more. How many {i} now?",),
    ("-", "-"): ("{n} has {a} {ia}, gives away {b}, then {c} more. How many {i} are left?",),
}

LEVELS = (1, 2, 3, 4)
LEVEL_NAMES = {
    1: "one step, numbers 0-9",
    2: "one step, up to 19",
    3: "one step, up to 99",
    4: "two steps",
}


def apply_op(a: int, op: str, b: int) -> int:
    """``a op b`` for op in ``+``/``-``."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    raise ValueError(f"op must be '+' or '-', got {op!r}")


def is_digit_fact(a: int, op: str, b: int) -> bool:
    """True when ``a op b`` is one column of the column method (a one-digit fact).

    Addition: two digits. Subtraction: ``a <= 18``, ``b <= 9`` and a result of 0-9 (the
    inverse of a two-digit sum, which is what a borrowed column computes).
    """
    if op == "+":
        return 0 <= a <= 9 and 0 <= b <= 9
    return 0 <= b <= 9 and b <= a <= 18 and a - b <= 9


def column_steps(a: int, op: str, b: int) -> list[str]:
    """The column method for ``a op b`` (``a >= b`` for subtraction), ones column first.

    ``86+57`` -> ``["6+7=13, carry 1", "8+5+1=14"]``; ``52-38`` -> ``["12-8=4, borrow 1",
    "5-1-3=1"]``. Missing digits of the shorter number are written as 0; the last column
    writes its whole value, which becomes the leading digits of the result.
    """
    if op == "-" and a < b:
        raise ValueError(f"subtraction needs a >= b, got {a}-{b}")
    da, db = str(a)[::-1], str(b)[::-1]
    width = max(len(da), len(db))
    steps: list[str] = []
    carry = 0
    for col in range(width):
        x = int(da[col]) if col < len(da) else 0
        y = int(db[col]) if col < len(db) else 0
        last = col == width - 1
        if op == "+":
            value = x + y + carry
            expr = f"{x}+{y}" + (f"+{carry}" if carry else "") + f"={value}"
            carry = value // 10
            if carry and not last:
                expr += ", carry 1"
        else:
            top = x - carry
            borrow = 1 if top < y and not last else 0
            lead = x + 10 * borrow
            value = lead - carry - y
            expr = f"{lead}" + (f"-{carry}" if carry else "") + f"-{y}={value}"
            if borrow:
                expr += ", borrow 1"
            carry = borrow
        steps.append(expr)
    return steps


@dataclass(frozen=True)
class Problem:
    """One arithmetic problem: ``numbers[0] ops[0] numbers[1] (ops[1] numbers[2])``."""

    numbers: tuple[int, ...]
    ops: tuple[str, ...]
    level: int

    def __post_init__(self) -> None:
        if len(self.numbers) != len(self.ops) + 1:
            raise ValueError(f"need one more number than ops, got {self.numbers} {self.ops}")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level}")

    @property
    def key(self) -> str:
        """Wording-free identity, e.g. ``"52-38"``; the unit of the train/held-out split."""
        parts = [str(self.numbers[0])]
        for op, n in zip(self.ops, self.numbers[1:], strict=True):
            parts += [op, str(n)]
        return "".join(parts)

    @cached_property
    def partials(self) -> tuple[int, ...]:
        """Running results after each step."""
        values = [self.numbers[0]]
        for op, n in zip(self.ops, self.numbers[1:], strict=True):
            values.append(apply_op(values[-1], op, n))
        return tuple(values[1:])

    @property
    def answer(self) -> int:
        return self.partials[-1]

    def think(self) -> str:
        """The worked solution without tags: ``"52-38: 12-8=4, borrow 1; 5-1-3=1; so 14"``."""
        a, op, b = self.numbers[0], self.ops[0], self.numbers[1]
        if len(self.ops) == 1 and not is_digit_fact(a, op, b):
            return f"{a}{op}{b}: " + "; ".join(column_steps(a, op, b)) + f"; so {self.answer}"
        steps, left = [], self.numbers[0]
        for op, n, value in zip(self.ops, self.numbers[1:], self.partials, strict=True):
            steps.append(f"{left}{op}{n}={value}")
            left = value
        return "; ".join(steps) + f"; so {self.answer}"

    def question(self, rng: random.Random) -> str:
        """The word problem, wording drawn from ``rng``."""
        template = rng.choice(TEMPLATES[self.ops])
        fields = dict(zip("abc", map(str, self.numbers), strict=False))
        item = rng.choice(ITEMS)
        item_a = item[:-1] if self.numbers[0] == 1 else item
        return template.format(n=rng.choice(NAMES), i=item, ia=item_a, **fields)


def all_problems(level: int) -> list[Problem]:
    """Every problem of a level, in a fixed order."""
    out: list[Problem] = []
    if level in (1, 2, 3):
        lo, hi = {1: (0, 9), 2: (10, 19), 3: (20, 99)}[level]
        for a in range(hi + 1):
            for b in range(hi + 1):
                if max(a, b) < lo:
                    continue
                out.append(Problem((a, b), ("+",), level))
                if a >= b:
                    out.append(Problem((a, b), ("-",), level))
        return out
    if level == 4:
        for ops in (("+", "-"), ("-", "+"), ("+", "+"), ("-", "-")):
            for a in range(1, 10):
                for b in range(1, 10):
                    for c in range(1, 10):
                        p = Problem((a, b, c), ops, 4)
                        lefts = (a, *p.partials[:-1])
                        if all(
                            is_digit_fact(x, op, n)
                            for x, op, n in zip(lefts, ops, (b, c), strict=True)
                        ):
                            out.append(p)
        return out
    raise ValueError(f"level must be one of {LEVELS}, got {level}")


def is_held_out(key: str, seed: int, held_out_share: float) -> bool:
    """Seeded, platform-independent membership of a problem key in the held-out split."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < held_out_share


# Completion styles used to build supervised targets. "strict" is the format the product asks
# for; the others are the loose habits a model picks up from mixed data, kept on purpose in the
# default model so a format reward has something to teach.
COMPLETION_STYLES = (
    "strict",  # <think>...</think><answer>24</answer>
    "think_then_number",  # <think>...</think>24
    "think_then_sentence",  # <think>...</think>The answer is 24.
    "unclosed_answer",  # <think>...</think><answer>24
    "untagged_steps",  # ...; so 24. <answer>24</answer>
    "answer_only",  # <answer>24</answer>
    "sentence_only",  # The answer is 24.
)


def render_completion(problem: Problem, style: str) -> str:
    """The assistant reply to ``problem`` in one of ``COMPLETION_STYLES``."""
    think, ans = problem.think(), problem.answer
    renders = {
        "strict": f"<think>{think}</think><answer>{ans}</answer>",
        "think_then_number": f"<think>{think}</think>{ans}",
        "think_then_sentence": f"<think>{think}</think>The answer is {ans}.",
        "unclosed_answer": f"<think>{think}</think><answer>{ans}",
        "untagged_steps": f"{think}. <answer>{ans}</answer>",
        "answer_only": f"<answer>{ans}</answer>",
        "sentence_only": f"The answer is {ans}.",
    }
    if style not in renders:
        raise ValueError(f"style must be one of {COMPLETION_STYLES}, got {style!r}")
    return renders[style]
