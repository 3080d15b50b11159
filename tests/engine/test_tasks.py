"""The built-in arithmetic task: worked solutions, the split, rows."""

from __future__ import annotations

import random
import re

import pytest

from engine.data.datasets import rows_to_dataset
from engine.tasks import SYSTEM_PROMPT, ArithmeticTask, builtin_task
from engine.tasks.arithmetic import (
    COMPLETION_STYLES,
    LEVELS,
    Problem,
    all_problems,
    column_steps,
    is_digit_fact,
    render_completion,
)
from engine.tasks.phrasings import (
    BUILTIN,
    FAMILIES,
    FAMILY_NAMES,
    HELD_OUT_FAMILIES,
    HELD_OUT_FAMILY_NAMES,
    render,
)


def test_column_steps_addition_with_carry():
    assert column_steps(86, "+", 57) == ["6+7=13, carry 1", "8+5+1=14"]
    assert column_steps(47, "+", 8) == ["7+8=15, carry 1", "4+0+1=5"]
    assert column_steps(40, "+", 58) == ["0+8=8", "4+5=9"]


def test_column_steps_subtraction_with_borrow():
    assert column_steps(52, "-", 38) == ["12-8=4, borrow 1", "5-1-3=1"]
    assert column_steps(86, "-", 62) == ["6-2=4", "8-6=2"]
    assert column_steps(52, "-", 48) == ["12-8=4, borrow 1", "5-1-4=0"]
    with pytest.raises(ValueError, match="a >= b"):
        column_steps(3, "-", 5)


def test_think_is_the_worked_solution():
    assert Problem((52, 38), ("-",), 3).think() == "52-38: 12-8=4, borrow 1; 5-1-3=1; so 14"
    assert Problem((7, 5), ("+",), 1).think() == "7+5=12; so 12"
    assert Problem((13, 5), ("+",), 2).think() == "13+5: 3+5=8; 1+0=1; so 18"
    assert Problem((7, 5, 4), ("+", "-"), 4).think() == "7+5=12; 12-4=8; so 8"


def test_every_column_is_a_digit_fact_and_every_answer_is_right():
    for level in LEVELS:
        for p in all_problems(level)[::7]:
            expected = eval(p.key)  # keys are plain "a+b-c" arithmetic
            assert p.answer == expected >= 0
            assert p.think().endswith(f"so {expected}")
            if len(p.ops) == 1 and not is_digit_fact(p.numbers[0], p.ops[0], p.numbers[1]):
                for step in column_steps(p.numbers[0], p.ops[0], p.numbers[1]):
                    expr = step.split(",")[0]
                    left, value = expr.split("=")
                    assert eval(left) == int(value)


def test_levels_have_the_documented_ranges():
    assert max(max(p.numbers) for p in all_problems(1)) == 9
    assert {max(p.numbers) for p in all_problems(2)} == set(range(10, 20))
    assert min(max(p.numbers) for p in all_problems(3)) == 20
    assert all(len(p.ops) == 2 for p in all_problems(4))


def test_render_completion_styles():
    p = Problem((86, 62), ("-",), 3)
    assert render_completion(p, "strict") == (
        "<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>"
    )
    assert render_completion(p, "sentence_only") == "The answer is 24."
    assert len({render_completion(p, s) for s in COMPLETION_STYLES}) == len(COMPLETION_STYLES)
    with pytest.raises(ValueError, match="style must be one of"):
        render_completion(p, "fancy")


def test_held_out_split_never_overlaps_training():
    task = builtin_task(seed=0)
    for level in LEVELS:
        train = {p.key for p in task.problems("train", level)}
        held = {p.key for p in task.problems("heldout", level)}
        assert held and train
        assert not train & held
        assert train | held == {p.key for p in all_problems(level)}
    train_rows = task.train_rows(3000)
    eval_rows = task.eval_rows(400)
    assert not {r["key"] for r in train_rows} & {r["key"] for r in eval_rows}
    assert {r["key"] for r in eval_rows} <= {
        p.key for level in LEVELS for p in task.problems("heldout", level)
    }


def test_split_depends_on_seed_and_is_deterministic():
    a, b = builtin_task(seed=0), builtin_task(seed=1)
    keys = lambda t: {p.key for p in t.problems("heldout", 3)}  # noqa: E731
    assert keys(a) == keys(builtin_task(seed=0))
    assert keys(a) != keys(b)
    assert a.eval_rows(20) == builtin_task(seed=0).eval_rows(20)
    assert a.train_rows(20) == builtin_task(seed=0).train_rows(20)


def test_held_out_share_is_about_ten_percent():
    task = builtin_task()
    held = sum(len(task.problems("heldout", lv)) for lv in LEVELS)
    total = sum(len(all_problems(lv)) for lv in LEVELS)
    assert 0.08 < held / total < 0.12


def test_rows_follow_the_contract():
    rows = builtin_task().eval_rows(8)
    assert [r["difficulty"] for r in rows] == [1, 2, 3, 4, 1, 2, 3, 4]
    for r in rows:
        assert set(r) == {"id", "prompt", "answer", "difficulty", "key"}
        assert r["prompt"][0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert r["prompt"][1]["role"] == "user"
        assert str(eval(r["key"])) == r["answer"]
        numbers = r["key"].replace("-", "+").split("+")
        assert all(n in r["prompt"][1]["content"] for n in numbers)
    assert len({r["id"] for r in builtin_task().train_rows(500)}) == 500


def test_train_rows_cover_levels_evenly():
    rows = builtin_task().train_rows(2000)
    counts = {lv: sum(r["difficulty"] == lv for r in rows) for lv in LEVELS}
    assert all(400 < c < 600 for c in counts.values()), counts


def test_question_wording_is_seeded_and_singular_for_one():
    p = Problem((1, 1), ("-",), 1)
    assert p.question(random.Random(3)) == p.question(random.Random(3))
    assert "1 apples" not in " ".join(p.question(random.Random(i)) for i in range(30))


def test_no_system_prompt_and_dataset():
    task = ArithmeticTask(system_prompt="")
    assert [m["role"] for m in task.eval_rows(1)[0]["prompt"]] == ["user"]
    ds = rows_to_dataset(builtin_task().eval_rows(12))
    assert len(ds) == 12 and set(ds.column_names) >= {"prompt", "answer", "difficulty", "id"}
    with pytest.raises(ValueError, match="held_out_share"):
        ArithmeticTask(held_out_share=0.0)


def _template_regex(template: str) -> re.Pattern[str]:
    """A template as a regex whose fields match any text."""
    parts = re.split(r"\{[^}]*\}", template)
    return re.compile(".+?".join(re.escape(p) for p in parts), re.DOTALL)


def _templates(family) -> list[str]:
    return [t for ts in family.templates.values() for t in ts] + [*family.any_ops, *family.two_step]


def test_every_family_asks_every_problem_shape_it_claims_with_all_numbers():
    task = builtin_task()
    rng = random.Random(0)
    for family in (*FAMILIES, *HELD_OUT_FAMILIES):
        for ops in {p.ops for lv in LEVELS for p in all_problems(lv)}:
            if not family.choices(ops):
                continue
            problem = next(p for lv in LEVELS for p in task.problems("train", lv) if p.ops == ops)
            for _ in range(20):
                text = render(family, problem, rng)
                assert "{" not in text and "}" not in text, text
                assert all(str(n) in text for n in problem.numbers), text


def test_training_questions_vary_in_structure_and_surface():
    task = builtin_task()
    rng = random.Random(1)
    problems = [task.sample_problem(rng) for _ in range(600)]
    questions = [task.question(p, rng) for p in problems]
    assert len(set(questions)) > 550
    for p, q in zip(problems, questions, strict=True):
        assert all(str(n) in q for n in p.numbers), q
    builtin = [
        q for q in questions if any(_template_regex(t).fullmatch(q) for t in _templates(BUILTIN))
    ]
    assert 0.1 < len(builtin) / len(questions) < 0.3  # built-in 20%, before surface noise
    assert any(q.startswith("What is ") and q.endswith("?") for q in questions)
    assert any(q != q.strip() or q.isupper() or q.islower() for q in questions)
    only_builtin = [task.question(p, rng, builtin_share=1.0, noise_share=0.0) for p in problems]
    builtin_res = [_template_regex(t) for t in _templates(BUILTIN)]
    assert all(any(r.fullmatch(q) for r in builtin_res) for q in only_builtin)


def test_held_out_families_never_appear_in_the_training_stream():
    assert not set(FAMILY_NAMES) & set(HELD_OUT_FAMILY_NAMES)
    held = [_template_regex(t) for f in HELD_OUT_FAMILIES for t in _templates(f)]
    task = builtin_task()
    rng = random.Random(2)
    for _ in range(3000):
        q = task.question(task.sample_problem(rng), rng, noise_share=0.0)
        assert not any(r.fullmatch(q) for r in held), q


def test_unseen_phrasing_rows_are_held_out_problems_in_held_out_families():
    task = builtin_task()
    rows = task.unseen_phrasing_rows(80)
    assert rows == task.unseen_phrasing_rows(80)
    assert [r["difficulty"] for r in rows[:8]] == [1, 2, 3, 4, 1, 2, 3, 4]
    assert {r["family"] for r in rows} == set(HELD_OUT_FAMILY_NAMES)
    heldout = {p.key for lv in LEVELS for p in task.problems("heldout", lv)}
    assert {r["key"] for r in rows} <= heldout
    # Same problems as the built-in held-out rows, asked differently.
    assert [r["key"] for r in rows] == [r["key"] for r in task.eval_rows(80)]
    for r in rows:
        assert str(eval(r["key"])) == r["answer"]
        text = r["prompt"][-1]["content"]
        assert all(n in text for n in r["key"].replace("-", "+").split("+")), text


def test_the_worked_example_is_a_training_problem_in_the_format_the_rewards_pay_for():
    from engine.tasks import WORKED_EXAMPLE_SYSTEM_PROMPT
    from engine.tasks.arithmetic import Problem, is_held_out
    from rewards.registry import REGISTRY

    problem = Problem(numbers=(13, 5), ops=("+",), level=2)
    assert not is_held_out(problem.key, 0, ArithmeticTask().held_out_share)
    reply = WORKED_EXAMPLE_SYSTEM_PROMPT.rsplit("\n", 2)[-2:]
    text = "\n".join(reply)
    assert text == f"<think>{problem.think()}</think>\n<answer>{problem.answer}</answer>"
    for mode in ("strict", "soft"):
        assert REGISTRY["format"].build({"mode": mode}, name="f")(completions=[text]) == [1.0]
