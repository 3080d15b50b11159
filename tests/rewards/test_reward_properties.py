"""Property tests: the composer and probes never fail on any text or any valid spec."""

import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.models.char_tokenizer import build_char_tokenizer
from rewards.analysis.probes import run_probes
from rewards.composer import score
from rewards.registry import REGISTRY
from rewards.spec import ComponentSpec, RewardSpec, RewardSpecError
from tests.tiny_models import save_tiny_reward_model

#: The reward_model component's model: a tiny random one, built once for this module.
TINY_RM = Path(tempfile.mkdtemp(prefix="tiny-rm-")) / "rm"
DEAD_JUDGE = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True, scope="module")
def code_allowed():
    """The python component is part of the registry under test (user code enabled), and the
    reward_model component has a real model to load."""
    save_tiny_reward_model(TINY_RM, build_char_tokenizer())
    settings = {
        "STUDIO_ALLOW_CODE": "1",
        "STUDIO_JUDGE_URLS": DEAD_JUDGE,
        "STUDIO_JUDGE_KEYS": "NO_SUCH_JUDGE_KEY",
    }
    old = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    yield
    for key, value in old.items():
        if value is None:
            del os.environ[key]
        else:
            os.environ[key] = value


TAGS = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)
SPECIAL = {
    "think_tag": TAGS,
    "answer_tag": st.one_of(st.just("answer"), TAGS),
    "gold_column": st.sampled_from(["answer", "solution"]),
    "letters": st.sampled_from(["ABCD", "AB", "ABCDEFGHIJ"]),
    "pattern": st.sampled_from(
        ["sorry", r"\d+", r"(a+)+$", r"^<think>", "[[:alpha:]]{5,}", "é|ß|中"]
    ),
    # python: user functions that score, explain, skip, fail, or read a column
    "code": st.sampled_from(
        [
            "def reward(completions, **k):\n    return [len(c) / 100 for c in completions]",
            "def reward(completions, **k):\n    return [(0.5, 'why') for c in completions]",
            "def reward(completions, **k):\n    return [None] * len(completions)",
            "def reward(completions, **k):\n    raise ValueError('user bug')",
            "def reward(completions, answer=None, **k):\n"
            "    return [float(str(a) in c) for c, a in zip(completions, answer or completions)]",
        ]
    ),
    "path": st.just(""),
    "embedding_model": st.just(""),
    "rubric": st.sampled_from(["Grade it.", "é 中 ] } \n {score}"]),
    "api_key_env": st.just("NO_SUCH_JUDGE_KEY"),
    "model": st.just(str(TINY_RM)),
    "device": st.just("cpu"),
    "markers": st.lists(
        st.sampled_from([r"Step \d+:", r"^\d+\.", "First,", ";", r"\n-"]), max_size=4
    ),
}


#: Parameters whose name means something else in another component.
SPECIAL_OF = {
    ("code_format", "language"): st.sampled_from(["python", "json", "js", "PY"]),
    # judge: an endpoint that refuses at once (discard port), so every judgement fails
    ("judge", "url"): st.just(DEAD_JUDGE),
    ("judge", "backend"): st.just("openai"),
    ("judge", "retries"): st.just(0),
    ("judge", "model"): st.just("judge-1"),
}


def param_values(spec, component=""):
    if (component, spec.name) in SPECIAL_OF:
        return SPECIAL_OF[component, spec.name]
    if spec.name in SPECIAL:
        return SPECIAL[spec.name]
    if spec.type == "float":
        return st.floats(spec.min, spec.max, allow_nan=False)
    if spec.type == "int":
        return st.integers(int(spec.min), int(min(spec.max, 5000)))
    if spec.type == "bool":
        return st.booleans()
    if spec.type == "list":
        return st.lists(st.sampled_from(spec.choices), max_size=3)
    return st.sampled_from(spec.choices)


@st.composite
def component_specs(draw):
    name = draw(st.sampled_from(list(REGISTRY)))
    info = REGISTRY[name]
    chosen = draw(st.lists(st.sampled_from(info.params), unique_by=lambda p: p.name))
    params = {p.name: draw(param_values(p, name)) for p in chosen}
    if name == "python":  # parameters without a usable default
        params["code"] = draw(SPECIAL["code"])
    if name == "reward_model":
        params["model"] = str(TINY_RM)
    if name == "judge":
        params |= {"model": "judge-1", "url": DEAD_JUDGE, "retries": 0, "backend": "openai"}
    weight = draw(st.floats(-100, 100, allow_nan=False))
    return ComponentSpec(name, weight, params, enabled=draw(st.booleans()))


@st.composite
def specs(draw):
    comps = draw(st.lists(component_specs(), min_size=1, max_size=6))
    try:
        return RewardSpec(comps)
    except RewardSpecError:
        assume(False)


BIG = [
    "x" * 100_000,
    "the cat " * 12_500,
    "<think>" + "1+1=2; " * 14_000 + "</think><answer>2</answer>",
    "中文" * 50_000,
]
TEXTS = st.one_of(
    st.text(max_size=300),
    st.sampled_from(["", " ", "\n\t  \n", "\u200b", "```python\nx = (\n```", "我喜欢吃苹果", *BIG]),
    st.builds(
        lambda a, b, c: f"<think>{a}</think><answer>{b}</answer>{c}",
        st.text(max_size=80),
        st.text(max_size=20),
        st.sampled_from(["", " ", "\n"]),
    ),
    st.builds(lambda n: rf"so \boxed{{{n}}}", st.integers(-(10**20), 10**20)),
)
COMPLETIONS = st.one_of(TEXTS, TEXTS.map(lambda t: [{"role": "assistant", "content": t}]))
GOLDS = st.one_of(
    st.none(),
    st.sampled_from(["24", "#### 1,000", r"\frac{1}{2}", "B", "x"]),
    st.text(max_size=20),
    st.integers(),
)


def check_totals(scored):
    for s in scored:
        contributions = [t.contribution for t in s.trace if t.contribution is not None]
        for t in s.trace:
            assert (t.raw is None) == (t.contribution is None)
            if t.raw is not None:
                assert math.isfinite(t.raw) and t.contribution == t.weight * t.raw
            assert isinstance(t.explanation, str) and t.explanation
        if not contributions:
            assert s.total is None
        else:
            assert math.isfinite(s.total)
            assert math.isclose(s.total, math.fsum(contributions), rel_tol=1e-12, abs_tol=1e-9)
        s.to_dict()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    spec=specs(),
    batch=st.lists(st.tuples(COMPLETIONS, GOLDS), min_size=1, max_size=6),
    with_ids=st.booleans(),
)
def test_composer_never_raises_and_totals_add_up(spec, batch, with_ids):
    completions = [c for c, _ in batch]
    answers = [a for _, a in batch]
    ids = [list(range(len(str(c)) % 3000)) for c in completions] if with_ids else None
    scored = score(spec, None, completions, answers=answers, completion_ids=ids)
    assert len(scored) == len(batch)
    check_totals(scored)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(spec=specs(), completion=TEXTS, gold=GOLDS)
def test_probes_never_raise(spec, completion, gold):
    for result in run_probes(spec, "prompt", completion, gold, tokenize=lambda s: list(s.encode())):
        result.to_dict()
        if result.applicable and result.delta_total is not None:
            assert math.isfinite(result.delta_total)
