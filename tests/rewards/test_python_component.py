"""The python component: the user's reward() in a child process, with limits and clear errors."""

import pytest

from rewards.components.python_code import (
    ALLOW_CODE_ENV,
    PythonCode,
    UserCodeError,
    enforce_code_policy,
)
from rewards.composer import score
from rewards.spec import RewardSpec, RewardSpecError


@pytest.fixture
def code_on(monkeypatch):
    monkeypatch.setenv(ALLOW_CODE_ENV, "1")


def spec_of(code=None, path=None, **params):
    params = {**params, **({"code": code} if code else {}), **({"path": path} if path else {})}
    component = {"name": "python", "label": "mine", "params": params}
    return RewardSpec.from_dict({"components": [component]})


def test_refused_by_name_without_the_flag(monkeypatch):
    monkeypatch.delenv(ALLOW_CODE_ENV, raising=False)
    with pytest.raises(RewardSpecError) as err:
        spec_of("def reward(c, **k):\n    return [1.0] * len(c)")
    assert err.value.field == "components[0].params"
    assert "component 'python'" in str(err.value) and ALLOW_CODE_ENV in str(err.value)


def test_public_app_without_login_clears_the_flag():
    env = {ALLOW_CODE_ENV: "1"}
    assert enforce_code_policy(env, public=False, login=False)
    assert enforce_code_policy(env, public=True, login=True)
    assert not enforce_code_policy(env, public=True, login=False)
    assert ALLOW_CODE_ENV not in env


def test_scores_pairs_columns_and_prompts(code_on):
    code = (
        "def reward(completions, answer, prompts, **columns):\n"
        "    print('user output never corrupts the reply')\n"
        "    out = []\n"
        "    for c, a, p in zip(completions, answer, prompts):\n"
        "        out.append((1.0, f'{p} found {a}') if a in c else None)\n"
        "    return out\n"
    )
    scored = score(spec_of(code), ["p1", "p2"], ["is 42", "is 7"], answers=["42", "8"])
    assert [s.total for s in scored] == [1.0, None]
    assert scored[0].trace[0].explanation == "p1 found 42"
    assert scored[0].trace[0].name == "mine"


def test_chat_completions_arrive_as_text(code_on):
    code = "def reward(completions, **k):\n    return [float(len(c)) for c in completions]"
    scored = score(spec_of(code), None, [[{"role": "assistant", "content": "abc"}]])
    assert scored[0].total == 3.0


def test_code_from_a_file_with_a_helper_module(code_on, tmp_path):
    (tmp_path / "helper.py").write_text("def score(c):\n    return len(c) / 10\n")
    (tmp_path / "my_reward.py").write_text(
        "from helper import score\n\ndef reward(completions, **k):\n"
        "    return [score(c) for c in completions]\n"
    )
    scored = score(spec_of(path=str(tmp_path / "my_reward.py")), None, ["12345"])
    assert scored[0].total == 0.5


FAULTS = [
    (
        "def reward(c, **k):\n    raise ValueError('boom')",
        "reward() raised ValueError: boom (line 2)",
    ),
    ("def reward(c, **k):\n    return [1.0]", "must return a list of 2 scores"),
    ("def reward(c, **k):\n    return ['x', 1]", "item 0 is 'x'"),
    ("def reward(c, **k):\n    return [float('nan'), 1]", "item 0 is nan"),
    ("def reward(c, **k):\n    return 3", "must return a list of 2 scores"),
    ("def reward(c, **k):\n    return [object(), 1]", "holds a object"),
    ("import os\ndef reward(c, **k):\n    os._exit(3)", "exit code 3"),
    ("def reward(c, **k):\n    return bytearray(10**10)", "ran out of memory (limit 256 MB)"),
    ("def reward(c, **k):\n    while True:\n        pass", "did not finish within 1 s"),
    ("import time\ndef reward(c, **k):\n    time.sleep(60)", "did not finish within 1 s"),
    ("reward = None", "defines no function named 'reward'"),
]


@pytest.mark.parametrize("code, fragment", FAULTS)
def test_failures_name_the_component_and_leave_the_batch_unscored(code_on, code, fragment):
    spec = spec_of(code, timeout_s=1.0, memory_mb=256)
    fn = spec.build()[0][0]
    with pytest.raises(UserCodeError) as err:
        fn.run_batch(["a", "b"], {})
    assert "python component 'mine'" in str(err.value) and fragment in str(err.value)
    scored = score(spec, None, ["a", "b"])
    assert [s.total for s in scored] == [None, None]
    assert fragment in scored[0].trace[0].explanation
    assert fn(["a", "b"]) == [None, None]


def test_child_does_not_see_the_servers_secrets(code_on, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    code = (
        "import os\ndef reward(c, **k):\n"
        "    return [float('HF_TOKEN' in os.environ or 'OPENAI_API_KEY' in os.environ)]"
    )
    assert score(spec_of(code), None, ["x"])[0].total == 0.0


@pytest.mark.parametrize(
    "params, field, fragment",
    [
        ({"code": "def reward(:"}, "code", "not valid Python"),
        ({"code": "x = 1"}, "code", "must define a function named reward"),
        ({}, "code", "exactly one of the two"),
        ({"code": "def reward(c): pass", "path": "a.py"}, "code", "exactly one"),
        ({"path": "../up.py"}, "path", "without '..'"),
        ({"path": "notes.txt"}, "path", "must be a .py file"),
        ({"code": "def reward(c): pass", "timeout_s": 0}, "timeout_s", "in [0.5, 600.0]"),
    ],
)
def test_bad_params_name_the_field(code_on, params, field, fragment):
    with pytest.raises(RewardSpecError) as err:
        RewardSpec.from_dict({"components": [{"name": "python", "params": params}]})
    assert err.value.field == f"components[0].params.{field}"
    assert fragment in str(err.value)


def test_a_missing_file_is_refused_when_built(code_on, tmp_path):
    spec = spec_of(path=str(tmp_path / "gone.py"))
    with pytest.raises(RewardSpecError, match="path: cannot read"):
        spec.build()


def test_the_component_is_a_picklable_trl_reward_function(code_on):
    import pickle

    fn = spec_of("def reward(c, **k):\n    return [2.0 for _ in c]").build()[0][0]
    fn = pickle.loads(pickle.dumps(fn))
    assert fn(["a"], prompts=["p"], trainer_state=None, answer=["1"]) == [2.0]
    assert isinstance(fn, PythonCode)


def test_export_embeds_the_code_as_text_and_matches_the_composer(code_on, tmp_path):
    from rewards.export import export_module
    from tests.fresh_interpreter import run_json_script

    user = tmp_path / "user_reward.py"
    user.write_text(
        "import pathlib\npathlib.Path('ran').touch()\n"
        "def reward(completions, answer, **k):\n"
        "    pairs = zip(completions, answer)\n"
        "    return [(float(a in c), 'has gold') if a else None for c, a in pairs]\n"
    )
    spec = RewardSpec.from_dict(
        {
            "components": [
                {"name": "python", "weight": 0.5, "params": {"path": str(user)}},
                {"name": "format", "weight": 0.25},
            ]
        }
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "exported.py").write_text(export_module(spec))
    completions = ["<think>x</think><answer>42</answer>", "no", "7"]
    answers = ["42", "3", ""]
    script = """
        import json, pathlib, sys
        import exported
        imported_ran = pathlib.Path("ran").exists()
        completions, answers = json.load(sys.stdin)
        print(json.dumps([imported_ran, exported.score(completions, answer=answers)]))
        """
    imported_ran, totals = run_json_script(script, out, [completions, answers])
    assert not imported_ran  # importing the module defines the reward; calling it runs the code
    assert (out / "ran").exists()
    ours = [s.total for s in score(spec, None, completions, answers=answers)]
    assert totals == pytest.approx(ours)


def test_web_paths_follow_the_input_policy(code_on, tmp_path):
    from engine.config.input_policy import UPLOADS_DIR, InputPolicy
    from engine.fields import ConfigError
    from rewards.components.python_code import restrict_code_paths

    policy = InputPolicy.for_web(tmp_path, env={})
    (tmp_path / UPLOADS_DIR).mkdir()
    inside = tmp_path / UPLOADS_DIR / "mine.py"
    outside = tmp_path / "server.py"
    for file in (inside, outside):
        file.write_text("def reward(completions, **k):\n    return [1.0 for _ in completions]\n")
    policy.check_reward(spec_of(path=str(inside)))
    with pytest.raises(ConfigError) as err:
        policy.check_reward(spec_of(path=str(outside)))
    assert err.value.field == "reward.components[0].params.path"
    restrict_code_paths(policy.file_allowed)
    try:
        assert score(spec_of(path=str(inside)), None, ["a"])[0].total == 1.0
        with pytest.raises(RewardSpecError, match="path: must be a file uploaded here"):
            spec_of(path=str(outside)).build()
    finally:
        restrict_code_paths(None)


@pytest.mark.reliability
def test_every_user_code_fault_is_contained(code_on, record_property):
    """Each fault kind, run through the composer: none escapes, none outlives its limit."""
    import time

    uncaught = overran = 0
    for code, _ in FAULTS:
        spec = spec_of(code, timeout_s=1.0, memory_mb=256)
        started = time.monotonic()
        try:
            scored = score(spec, None, ["a", "b"])
        except Exception:  # counting escapes is the point
            uncaught += 1
            continue
        overran += time.monotonic() - started > 1.0 + 5.0  # limit plus process start
        uncaught += any(s.total is not None for s in scored)
    record_property("code_faults", len(FAULTS))
    record_property("uncaught_errors", uncaught)
    record_property("limit_overruns", overran)
    assert uncaught == 0


def test_processes_the_users_code_starts_are_stopped_with_it(code_on, tmp_path):
    import time
    from pathlib import Path

    marker = tmp_path / "pid"
    code = (
        "import subprocess, sys\n"
        "def reward(c, **k):\n"
        "    p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"    open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "    print(b'\\xff\\xfe not utf-8'.decode('latin-1'), file=sys.stderr)\n"
        "    return [1.0 for _ in c]\n"
    )
    assert score(spec_of(code), None, ["a"])[0].total == 1.0
    pid = int(marker.read_text())
    status = Path(f"/proc/{pid}/status")
    for _ in range(50):  # the kill is sent; the process may take a moment to go
        # gone, or a zombie waiting for this container's init to reap it: either way, not running
        if not status.exists() or "State:\tZ" in status.read_text():
            break
        time.sleep(0.1)
    else:
        pytest.fail("the background process outlived the batch")


CASES_CODE = """
import math
def reward(completions, case, **columns):
    kind = case[0]
    if kind == "nan":
        return [float("nan"), 1.0, 1.0]
    if kind == "inf":
        return (math.inf, -math.inf, 0.0)
    if kind == "long reasons":
        return [(0.5, "w" * 500), None, (2, "short")]
    if kind == "too few":
        return [1.0]
    return [True, 1, 2]
"""
CASES = ["nan", "inf", "long reasons", "too few", "bool"]


def test_the_exported_component_reads_values_as_the_app_does(code_on, tmp_path):
    """Non-finite numbers, over-long reasons, a wrong length, booleans: the module exported for
    a user's own TRL script scores and explains each batch as the app does."""
    from rewards.components.base import BatchContext
    from rewards.export import export_module
    from tests.fresh_interpreter import run_json_script

    spec = spec_of(CASES_CODE)
    texts = ["a", "b", "c"]
    (tmp_path / "exported.py").write_text(export_module(spec))
    script = """
        import json, sys
        import exported
        texts, cases = json.load(sys.stdin)
        fn = exported.reward_funcs[0]
        out = []
        for case in cases:
            ctx = exported.BatchContext(len(texts), columns={"case": [case] * len(texts)})
            out.append([[j.value, j.explanation] for j in fn.judge(texts, ctx)])
        print(json.dumps(out))
        """
    exported = run_json_script(script, tmp_path, [texts, CASES])
    app = spec.build()[0][0]
    ours = [
        [[j.value, j.explanation] for j in app.judge(texts, BatchContext(3, columns={"case": c}))]
        for c in CASES
    ]
    assert exported == ours
    nan, _, long_reasons, too_few, _ = ours
    assert nan[0][0] is None and "item 0 is nan" in nan[0][1]
    assert long_reasons == [[0.5, "w" * 200], [None, NONE_WHY], [2.0, "short"]]
    assert "must return a list of 3 scores" in too_few[0][1]


NONE_WHY = "not scored (your function returned None)"


def test_a_cpu_limit_stop_reads_as_the_time_budget(code_on):
    """The child's CPU limit is timeout_s rounded up, so a busy loop may meet it before the wall
    clock (SIGXCPU): the message is the time budget's either way. Forced here by lowering the
    child's own CPU limit under a long timeout."""
    code = (
        "import resource\n"
        "def reward(c, **k):\n"
        "    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]\n"
        "    resource.setrlimit(resource.RLIMIT_CPU, (1, hard))\n"
        "    while True:\n"
        "        pass\n"
    )
    fn = spec_of(code, timeout_s=30.0, memory_mb=256).build()[0][0]
    with pytest.raises(UserCodeError, match="did not finish within 30 s"):
        fn.run_batch(["a"], {})
