"""Many ways to ask the same arithmetic problem, grouped in families of one sentence structure.

A *family* is a set of templates that share a structure: a bare expression to evaluate
(``What is 17 + 25?``), an instruction naming the operation with the numbers in another order
(``Subtract 25 from 42.``), a story told in another order or with other verbs, a measure with
units, a first-person or conditional story. Each family renders one-step problems (per
operation) and two-step problems. ``FAMILIES`` holds the families the default model is trained
on; ``HELD_OUT_FAMILIES`` holds families it never sees, used only to measure whether its reading
generalises to structures it was not taught (the held-out problem split applies on top).

Templates take ``{a} {b} {c}`` (the problem's numbers in its order), ``{n}`` a name, ``{i}`` an
item (plural), ``{ia}`` the item after ``{a}`` (singular when ``a`` is 1), ``{e}`` the problem
as an expression (``17 + 25``, ``17+25``, ``17 plus 25``) and ``{g}``/``{l}`` a gain/loss verb
phrase taking the following number (``gets {b} more``, ``gives away {b}``). Surface noise (case,
spacing, punctuation, a ``Q:`` prefix) is drawn on top by :func:`add_noise`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from engine.tasks.arithmetic import ITEMS, NAMES, TEMPLATES, Problem

MORE_NAMES = ("Kai", "Ivy", "Raj", "Lin", "Omar", "Nora", "Ali", "Jade")
MORE_ITEMS = ("stickers", "eggs", "balls", "cookies", "toys", "beads", "cups", "flowers")

# Verb phrases for a step that adds or removes ``{x}`` items; the story families draw from them.
GAIN = ("gets {x} more", "finds {x} more", "buys {x} more", "receives {x}", "picks up {x}")
LOSS = ("gives away {x}", "loses {x}", "eats {x}", "sells {x}", "uses {x}")
OP_WORDS = {"+": ("plus", "+"), "-": ("minus", "-")}
STEP_VERBS = {"+": ("add", "plus"), "-": ("subtract", "minus")}


@dataclass(frozen=True)
class Family:
    """One sentence structure.

    Attributes:
        name: how reports and rows name it.
        templates: templates per operation sequence (``("+",)``, ``("-", "+")``…).
        any_ops: templates for every problem (they ask for ``{e}``, the whole expression).
        two_step: templates for every two-step problem (``{s1}``/``{g1}`` phrase each step).
    """

    name: str
    templates: dict[tuple[str, ...], tuple[str, ...]]
    any_ops: tuple[str, ...] = ()
    two_step: tuple[str, ...] = ()

    def choices(self, ops: tuple[str, ...]) -> tuple[str, ...]:
        """Every template of this family that can ask a problem with ``ops``."""
        return self.templates.get(ops, ()) + self.any_ops + (self.two_step if len(ops) == 2 else ())


def expression(problem: Problem, rng: random.Random) -> str:
    """The problem as an expression in one of three spellings: ``17 + 25``, ``17+25`` or
    ``17 plus 25``."""
    spelling = rng.randrange(3)
    parts = [str(problem.numbers[0])]
    for op, n in zip(problem.ops, problem.numbers[1:], strict=True):
        if spelling == 0:
            parts.append(f" {op} {n}")
        elif spelling == 1:
            parts.append(f"{op}{n}")
        else:
            parts.append(f" {OP_WORDS[op][0]} {n}")
    return "".join(parts)


def _step_phrase(op: str, x: int, rng: random.Random) -> str:
    return rng.choice(GAIN if op == "+" else LOSS).format(x=x)


def _steps_phrase(problem: Problem, rng: random.Random) -> tuple[str, str]:
    """(first step, second step) verb phrases of a two-step story."""
    (op1, op2), (_, b, c) = problem.ops, problem.numbers
    return _step_phrase(op1, b, rng), _step_phrase(op2, c, rng)


def _instruction_steps(problem: Problem, rng: random.Random) -> tuple[str, str]:
    (op1, op2), (_, b, c) = problem.ops, problem.numbers
    return f"{rng.choice(STEP_VERBS[op1])} {b}", f"{rng.choice(STEP_VERBS[op2])} {c}"


BUILTIN = Family("builtin", TEMPLATES)

FAMILIES: tuple[Family, ...] = (
    BUILTIN,
    Family(
        "expression",
        {},
        any_ops=(
            "What is {e}?",
            "What's {e}?",
            "How much is {e}?",
            "Compute {e}.",
            "Calculate {e}.",
            "Work out {e}.",
            "{e} = ?",
            "{e} =",
            "{e} equals what?",
            "{e}?",
            "{e}",
        ),
    ),
    Family(
        "operation_named",
        {
            ("+",): (
                "Add {b} to {a}.",
                "What is the sum of {a} and {b}?",
                "What is {b} more than {a}?",
                "Increase {a} by {b}.",
                "Find the total of {a} and {b}.",
            ),
            ("-",): (
                "Subtract {b} from {a}.",
                "What is {b} less than {a}?",
                "Take {b} away from {a}.",
                "What is the difference between {a} and {b}?",
                "Decrease {a} by {b}.",
            ),
        },
        two_step=(
            "Start with {a}, {s1}, then {s2}.",
            "Begin at {a}. {S1}. {S2}. What number do you get?",
        ),
    ),
    Family(
        "story_reordered",
        {
            ("+",): (
                "How many {i} does {n} have after getting {b} more, starting with {a}?",
                "{n} got {b} {i} today and already had {a}. How many {i} does {n} have?",
                "{n} picked {a} {ia} in the morning and {b} in the afternoon. How many in all?",
                "A box holds {a} {ia}. {n} puts in {b} more. How many {i} are in the box?",
            ),
            ("-",): (
                "How many {i} are left if {n} has {a} and gives away {b}?",
                "{n} sold {b} of {a} {i}. How many {i} does {n} still have?",
                "{n} had {a} {ia} and ate {b}. How many {i} remain?",
                "Of the {a} {i} in a bag, {b} were taken out. How many are still in the bag?",
            ),
        },
        two_step=(
            "{n} starts with {a} {ia}, {g1}, and then {g2}. How many {i} does {n} have?",
            "Starting with {a} {ia}, {n} {g1} and {g2}. How many {i} now?",
        ),
    ),
    Family(
        "measure",
        {
            ("+",): (
                "{n} ran {a} km on Monday and {b} km on Tuesday. How many km in total?",
                "A jug has {a} liters of water. {b} more liters are poured in. How many liters?",
                "{n} saved {a} dollars and then earned {b} dollars. How many dollars now?",
                "A plant is {a} cm tall and grows {b} cm. How tall is it now?",
            ),
            ("-",): (
                "A rope is {a} cm long. {n} cuts off {b} cm. How long is the rope now?",
                "{n} had {a} dollars and spent {b} dollars. How many dollars are left?",
                "It was {a} degrees and the temperature fell {b} degrees. What is it now?",
                "A film lasts {a} minutes and {b} minutes have passed. How many minutes remain?",
            ),
        },
    ),
    Family(
        "second_person",
        {
            ("+",): (
                "You have {a} {ia}. You get {b} more. How many {i} do you have?",
                "Say you own {a} {ia} and someone hands you {b}. How many {i} is that?",
            ),
            ("-",): (
                "You have {a} {ia} and give {b} away. How many {i} do you keep?",
                "Say you own {a} {ia} and lose {b} of them. How many {i} remain?",
            ),
        },
        two_step=(
            "You have {a} {ia}. You {g1v}. Then you {g2v}. How many {i} do you have?",
            "Say you own {a} {ia}, {g1v} and then {g2v}. How many {i} is that?",
        ),
    ),
    Family(
        "compact",
        {
            ("+",): ("{a} {i} + {b} {i} = ? {i}", "total: {a} and {b}", "{a} and {b} more makes?"),
            ("-",): (
                "{a} {i} - {b} {i} = ? {i}",
                "{a}, take away {b}: ?",
                "{b} out of {a} gone. left?",
            ),
        },
        any_ops=("{e} -> ?", "Answer: {e}", "[{e}] result?", "{e}. What do you get?"),
    ),
)

HELD_OUT_FAMILIES: tuple[Family, ...] = (
    Family(
        "expression_verbs",
        {},
        any_ops=(
            "Find the value of {e}.",
            "What does {e} equal?",
            "Solve: {e}",
            "Tell me {e}.",
            "{e} makes how much?",
        ),
    ),
    Family(
        "operation_question",
        {
            ("+",): (
                "What do you get when you add {a} and {b}?",
                "If you add {b} to {a}, what is the result?",
                "Combine {a} and {b}. What is the total?",
            ),
            ("-",): (
                "What do you get if you take {b} from {a}?",
                "If you subtract {b} from {a}, what is left?",
                "How much is left when {b} is removed from {a}?",
            ),
        },
        two_step=("Take {a}, {s1} and {s2}. What is the result?",),
    ),
    Family(
        "first_person",
        {
            ("+",): (
                "I have {a} {ia}. My friend gives me {b} more. How many {i} do I have?",
                "We had {a} {ia} and found {b} more. How many {i} do we have now?",
            ),
            ("-",): (
                "I have {a} {ia}. I give {b} to my friend. How many {i} do I have left?",
                "We had {a} {ia} and used {b}. How many {i} do we have now?",
            ),
        },
        two_step=("I have {a} {ia}. I {g1v}, then I {g2v}. How many {i} do I have?",),
    ),
    Family(
        "conditional",
        {
            ("+",): (
                "If {n} has {a} {ia} and gets {b} more, how many {i} will {n} have?",
                "Suppose a bus has {a} people and {b} get on. How many people are on it?",
            ),
            ("-",): (
                "If {n} has {a} {ia} and loses {b}, how many {i} will {n} have?",
                "Suppose a book has {a} pages and {n} has read {b}. How many pages are left?",
            ),
        },
        two_step=("If {n} has {a} {ia}, {g1}, and then {g2}, how many {i} does {n} end with?",),
    ),
)

FAMILY_NAMES = tuple(f.name for f in FAMILIES)
HELD_OUT_FAMILY_NAMES = tuple(f.name for f in HELD_OUT_FAMILIES)

# First-person forms of the gain/loss phrases ("gets 3 more" -> "get 3 more").
_FIRST_PERSON = {"gets": "get", "finds": "find", "buys": "buy", "receives": "receive",
                 "picks": "pick", "gives": "give", "loses": "lose", "eats": "eat",
                 "sells": "sell", "uses": "use"}  # fmt: skip


def _first_person(phrase: str) -> str:
    verb, rest = phrase.split(" ", 1)
    return f"{_FIRST_PERSON[verb]} {rest}"


def render(family: Family, problem: Problem, rng: random.Random) -> str:
    """``problem`` asked in one of ``family``'s templates, the wording drawn from ``rng``."""
    choices = family.choices(problem.ops)
    if not choices:
        raise ValueError(f"family {family.name!r} has no template for ops {problem.ops}")
    template = rng.choice(choices)
    a = problem.numbers[0]
    item = rng.choice(ITEMS + MORE_ITEMS)
    fields: dict[str, object] = dict(zip("abc", problem.numbers, strict=False))
    fields |= {"n": rng.choice(NAMES + MORE_NAMES), "i": item, "ia": item[:-1] if a == 1 else item}
    fields["e"] = expression(problem, rng)
    if len(problem.ops) == 2:
        s1, s2 = _instruction_steps(problem, rng)
        g1, g2 = _steps_phrase(problem, rng)
        fields |= {"s1": s1, "s2": s2, "S1": s1.capitalize(), "S2": s2.capitalize()}
        fields |= {"g1": g1, "g2": g2, "g1v": _first_person(g1), "g2v": _first_person(g2)}
    return template.format(**fields)


def add_noise(text: str, rng: random.Random) -> str:
    """One surface change a person might type: case, spacing, punctuation or a prefix."""
    kind = rng.randrange(8)
    if kind == 0:
        return text.lower()
    if kind == 1:
        return text.upper()
    if kind == 2:
        return re.sub(r" ", lambda _: " " * rng.choice((1, 2)), text)
    if kind == 3:
        return re.sub(r"\s*([+\-=])\s*", r" \1 ", text) if re.search(r"\d\s*[+\-]", text) else text
    if kind == 4:
        return text.rstrip("?.!") + rng.choice(("", "??", "!", " ?", " ."))
    if kind == 5:
        return rng.choice(("Q: ", "Question: ", "Please answer: ", "Quick one: ")) + text
    if kind == 6:
        return rng.choice((" ", "  ", "\n")) + text + rng.choice((" ", "\n", ""))
    return text.replace(", ", " , ").replace(". ", " . ")
