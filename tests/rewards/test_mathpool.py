"""math-verify runs in supervised workers: a hanging input is cut off, the pool recovers."""

import concurrent.futures
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from rewards.composer import score
from rewards.spec import PRESETS
from rewards.verification.deadline import call_deadline
from rewards.verification.math_worker import WARM_UP_CHECKS
from rewards.verification.mathcheck import check, first_integer_candidate, plain_integer
from rewards.verification.mathpool import InProcessChecker, MathPool, default_workers


def test_hanging_input_is_cut_off_and_the_pool_recovers():
    pool = MathPool(workers=1, timeout_s=2.0)
    try:
        pool.check_many([("1", "1/2")])  # start the worker before timing
        start = time.monotonic()
        # sympy evaluates 10^(10^10) exactly when comparing: minutes of CPU, unless stopped.
        results = pool.check_many([("24", "$10^{10^{10}}$"), (r"\frac{1}{2}", "0.5"), ("3", "x")])
        assert time.monotonic() - start < 30
        assert results[0].timed_out and not results[0].equal
        assert results[1].equal and not results[1].timed_out
        assert results[2].gold_ok and not results[2].equal
        processes = [w.proc for w in pool._workers]
    finally:
        pool.close()
    assert all(p.poll() is not None for p in processes)


def test_a_worker_warms_up_on_checks_that_reach_sympy():
    # An integer answer found without sympy would warm nothing.
    for gold, pred in WARM_UP_CHECKS:
        assert plain_integer(pred) is None and first_integer_candidate(pred) is None
        assert check(gold, pred).gold_ok
    assert check(*WARM_UP_CHECKS[0]).equal


def test_workers_agree_with_in_process_checks():
    pairs = [
        (r"\frac{1}{3}", r"\boxed{\frac{2}{6}}"),
        ("0.5", "1/2"),
        ("x+1", "1+x"),
        ("$x+1$", "$1+x$"),
        ("12", "12.0"),
    ]
    pool = MathPool(workers=2)
    try:
        assert (
            pool.check_many(pairs)
            == InProcessChecker().check_many(pairs)
            == [check(g, p) for g, p in pairs]
        )
    finally:
        pool.close()


def test_scoring_from_many_threads():
    # Web handlers run in threads: math-verify's signal timeouts would raise there.
    spec = PRESETS["hand-tuned GRPO script"]
    completions = [
        r"so \boxed{\frac{1}{2}}",
        "<think>First, a.</think><answer>24</answer>",
        "I think 0.5",
    ] * 4
    answers = ["0.5", "24", "1/2"] * 4
    expected = [s.to_dict() for s in score(spec, None, completions, answers=answers)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(score, spec, None, completions, answers) for _ in range(8)]
        for f in futures:
            assert [s.to_dict() for s in f.result()] == expected


def test_a_call_deadline_bounds_a_batch_of_slow_answers():
    # Each request alone may take a minute; the call as a whole gets 3 s, then every unanswered
    # check is "not verifiable" and the pool serves the next call normally.
    pool = MathPool(workers=1, timeout_s=60.0)
    try:
        pool.check_many([("1", "1/2")])  # start the worker first
        towers = [("24", f"$10^{{10^{{{n}}}}}$") for n in range(10, 30)]
        with call_deadline(3.0):
            results = pool.check_many(towers)
        assert all(r.timed_out and not r.equal for r in results)
        assert pool.check_many([(r"\frac{1}{2}", "0.5")])[0].equal
    finally:
        pool.close()


def test_default_workers_follow_the_cores_within_bounds():
    assert default_workers(1) == 1
    assert default_workers(2) == 2  # this CI machine: as before
    assert default_workers(3) == 2
    assert default_workers(16) == 8  # a GPU host: a step's rewards split eight ways
    assert default_workers(128) == 8


def fresh_json(script: str) -> object:
    """What ``script`` prints as JSON, run in a fresh interpreter (this test process imported
    math-verify and filled its parser's caches long ago) with one math worker."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        env={**os.environ, "REWARDS_MATH_WORKERS": "1"},
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)


def test_warm_up_leaves_the_first_scoring_nothing_to_import():
    out = fresh_json("""
        import json, sys
        from rewards.verification.mathpool import warm_up
        from rewards.verification.verify import judge_batch
        warm_up()
        before = set(sys.modules)
        verdicts = judge_batch(["So 2x = 6 and the answer is 3."], ["3"], "math")
        print(json.dumps({"new": sorted(set(sys.modules) - before), "ok": verdicts[0].correct}))
    """)
    assert out == {"new": [], "ok": True}


def test_warm_up_checks_fill_the_latex_parsers_predictions_for_prose_in_dollars():
    # ANTLR builds its prediction cache (DFA states) at each new shape of input: 0.09-0.17 s for
    # a young model's prose between dollar signs, paid once per worker inside a training step.
    script = """
        import json, logging
        from latex2sympy2_extended.gen.antlr4_13_2.PSParser import PSParser
        from rewards.verification.math_worker import WARM_UP_CHECKS
        from rewards.verification.mathcheck import check
        logging.disable(logging.WARNING)
        def states():
            return sum(len(dfa.states) for dfa in PSParser.decisionsToDFA)
        for gold, pred in WARM_UP_CHECKS[:COUNT]:
            check(gold, pred)
        before = states()
        check("7", "the cost of $1.10 (total) and the bat costing $")
        print(json.dumps(states() - before))
    """
    assert fresh_json(script.replace("COUNT", "None")) == 0
    assert fresh_json(script.replace("COUNT", "2")) > 0  # without the prose checks
