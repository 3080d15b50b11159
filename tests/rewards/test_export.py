"""The exported module, run in a fresh interpreter, scores exactly as the composer does."""

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.spec import PRESETS, ComponentSpec, RewardSpec
from rewards.trl_adapter import export_module
from tests.fresh_interpreter import run_json_script

SPEC = RewardSpec(
    [
        ComponentSpec("correctness", 1.0, {"wrong_value": -0.5}),
        ComponentSpec("format", 0.5, {"mode": "soft"}),
        ComponentSpec("reasoning_steps", 0.3, {"target": 4}),
        ComponentSpec("repetition", 0.2, {"n": 2, "split": "jieba"}),
        ComponentSpec("conciseness", 0.1, {"unit": "characters", "max_len": 300}),
        ComponentSpec("conciseness", 0.1, {"mode": "overlong", "max_len": 20, "cache": 10}),
        ComponentSpec("language", 0.7, {"language": "en"}),
        ComponentSpec("relative_length", 0.3),
        ComponentSpec("code_format", 0.2, {"scope": "answer"}),
        ComponentSpec("similarity", 0.5, {"scope": "answer"}),
        ComponentSpec("similarity", 0.25, {"metric": "chrf"}),
        ComponentSpec("rule", -0.4, {"pattern": "sorry"}),
        ComponentSpec(
            "rule",
            0.2,
            {"pattern": r"\d+", "kind": "must_contain", "effect": "bonus", "scope": "answer"},
        ),
    ],
    description="Everything at once.",
)

SAMPLES = [
    ("<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>", "24"),
    ("<think>86-62: 6-2=4; 8-6=3; so 34</think><answer>34</answer>", "24"),
    ("<think>I think so</think> The answer is 24", "24"),
    (
        "First, we subtract the ones. Next, the tens. Finally, the answer is 24. Sorry I was slow.",
        "24",
    ),
    ("Erst die Einer, dann die Zehner. Die Antwort ist vierundzwanzig.", "24"),
    (r"So the result is \boxed{\frac{1}{2}}", "0.5"),
    ("the the the the the the", None),
    ("", "7"),
    ("<answer>x</answer>", "not math"),
]


def test_exported_module_uses_only_public_imports():
    tree = ast.parse(export_module(SPEC))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    assert "rewards" not in modules
    assert modules <= set(sys.stdlib_module_names) | {
        "math_verify",
        "py3langid",
        "re2",
        "numpy",
        "jieba",  # imported only when repetition splits Chinese
        "rouge_score",  # and these only by the similarity metric that needs them
        "sacrebleu",
        "sentence_transformers",
        "torch",  # and these only by a reward model
        "transformers",
    }


def test_exported_module_matches_the_composer_in_a_fresh_interpreter(tmp_path):
    (tmp_path / "my_reward.py").write_text(export_module(SPEC))
    completions = [c for c, _ in SAMPLES]
    answers = [a for _, a in SAMPLES]
    script = """
        import json, sys
        import my_reward
        completions, answers = json.load(sys.stdin)
        raws = {f.__name__: f(completions, answer=answers, prompts=None, trainer_state=None)
                for f in my_reward.reward_funcs}
        print(json.dumps({"totals": my_reward.score(completions, answer=answers),
                          "raws": raws, "weights": my_reward.reward_weights}))
        """
    exported = run_json_script(script, tmp_path, [completions, answers])
    ours = score(SPEC, None, completions, answers=answers)
    assert exported["weights"] == [c.weight for c in SPEC.components]
    for i, sample in enumerate(ours):
        want, got = sample.total, exported["totals"][i]
        assert (want is None and got is None) or abs(want - got) <= 1e-9
        for trace in sample.trace:
            raw = exported["raws"][trace.name][i]
            assert (trace.raw is None and raw is None) or abs(trace.raw - raw) <= 1e-9, trace


def test_every_preset_exports_to_valid_python():
    for spec in PRESETS.values():
        compile(export_module(spec), "reward.py", "exec")


PAYLOAD = 'open("PWNED", "w").write("x")'
HOSTILE_TEXTS = [
    f'"""\n{PAYLOAD}\n"""',
    f"'''\n{PAYLOAD}\n'''",
    f"\\\\\n{PAYLOAD} #",
    "\\",
    f"line\n\r\n{PAYLOAD}\n\t\u2028\u2029",
    '"""' * 600,
    "é中文 🙂 \u202e" * 200,
]


def hostile_specs() -> list[RewardSpec]:
    """Valid specs whose text fields try to end their string literal and run code."""
    specs = [RewardSpec([ComponentSpec("format", 1.0)], description=t) for t in HOSTILE_TEXTS]
    specs.append(
        RewardSpec(
            [
                ComponentSpec("correctness", 1.0),
                ComponentSpec("rule", 0.5, {"pattern": f'"""; {PAYLOAD} #'}),
                ComponentSpec("rule", 0.5, {"pattern": "\\\\\"'\\n"}, label="quotes"),
            ],
            description=f"{PAYLOAD}",
        )
    )
    return specs


def test_hostile_text_is_refused_or_exported_as_inert_data(tmp_path):
    for bad in ("a\x00b", "\ud800"):  # text that cannot be stored is refused up front
        with pytest.raises(RewardSpecError, match="description"):
            RewardSpec([ComponentSpec("format", 1.0)], description=bad)
    specs = hostile_specs()
    for i, spec in enumerate(specs):
        (tmp_path / f"hostile_{i}.py").write_text(export_module(spec), encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import importlib, json, sys
        sys.path.insert(0, {str(tmp_path)!r})
        out = []
        for i in range({len(specs)}):
            m = importlib.import_module(f"hostile_{{i}}")
            out.append([m.DESCRIPTION, m.SPEC])
        print(json.dumps(out))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (tmp_path / "PWNED").exists()
    loaded = json.loads(result.stdout)
    for spec, (description, data) in zip(specs, loaded, strict=True):
        assert description == spec.description and data == spec.to_dict()


def test_the_module_name_must_be_an_identifier():
    with pytest.raises(ValueError, match="identifier"):
        export_module(SPEC, module_name='x"""\nimport os')


def test_ruff_passes_on_the_exported_module(tmp_path, monkeypatch):
    """The module is code ruff reads like ours (the project's lint rules and format): sources
    inlined whole, the runtime part a real module, the spec's data laid out as ruff would."""
    from ruff.__main__ import find_ruff_bin

    from rewards.components.python_code import ALLOW_CODE_ENV
    from tests.rewards.test_python_component import CASES_CODE, spec_of

    monkeypatch.setenv(ALLOW_CODE_ENV, "1")  # a python component: its code a long string

    config = Path(__file__).resolve().parents[2] / "pyproject.toml"
    specs = [SPEC, *PRESETS.values(), *hostile_specs(), spec_of(CASES_CODE)]
    for i, spec in enumerate(specs):
        (tmp_path / f"exported_{i}.py").write_text(export_module(spec), encoding="utf-8")
    ruff = [find_ruff_bin(), "--config", str(config)]
    for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):
        done = subprocess.run(
            [*ruff, *command, str(tmp_path)], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
