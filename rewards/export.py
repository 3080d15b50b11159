"""A RewardSpec as one standalone Python module for a user's own TRL script.

The module is assembled from this library's own standalone sources (text handling, answer
extraction, math-verify checks, the batched language identifier, the component classes), so
the exported reward computes exactly what the app computes; only the registry metadata and the
imports between our modules are left out, and math-verify runs in-process instead of in
supervised workers (with math-verify's own timeouts in the main thread, as TRL's
``accuracy_reward`` does). It imports only public libraries: math-verify, py3langid, numpy,
google-re2 (``re2``) and the standard library (components that need more import it where
they use it: jieba, rouge-score, sacrebleu, torch/transformers).

A ``python`` component's code (from its text, or read from its file now) is embedded as a
string literal and executed by the importing script on the component's first call, in that
process: the app's child-process time and memory limits do not travel with it. This is the
user's own code going to the user's own script; nothing runs while the module is written.
"""

from __future__ import annotations

import ast
import inspect
import json
import pprint
import re
from pathlib import Path

from rewards.components.python_code import read_path as _read_user_code
from rewards.errors import RewardSpecError
from rewards.schedule import scheduled_weight
from rewards.spec import RewardSpec

_ROOT = Path(__file__).resolve().parent
# The schedule formula, carried verbatim (it needs only ``math``).
_SCHEDULE_SOURCE = inspect.getsource(scheduled_weight)

#: Sources included, in dependency order.
_MODULES = (
    "input_guards/describe.py",
    "verification/deadline.py",
    "completions/text.py",
    "verification/answers.py",
    "input_guards/safe_regex.py",
    "verification/mathcheck.py",
    "@in_process_checker",
    "verification/verify.py",
    "completions/langid_batch.py",
    "@given_params",
    "components/base.py",
    "components/correctness.py",
    "components/format.py",
    "components/reasoning_steps.py",
    "components/repetition.py",
    "components/conciseness.py",
    "components/relative_length.py",
    "components/code_format.py",
    "components/similarity.py",
    "components/reward_model.py",
    "components/judge_parse.py",
    "components/judge_http.py",
    "components/judge.py",
    "components/language.py",
    "components/rule.py",
    "components/python_values.py",
    "@python_code",
    "completions/tool_calls.py",
    "components/tool_format.py",
    "components/tool_errors.py",
    "components/tool_budget.py",
    "components/tool_answer.py",
)

# Definitions that only describe components for the registry (forms, validation).
_REGISTRY_ONLY = {"PARAMS", "INFO", "_check"}

_IN_PROCESS_CHECKER = '''
class _InProcessChecker:
    """math-verify in this process; its own timeouts where signals work (the main thread)."""

    def check_many(self, pairs):
        main = threading.current_thread() is threading.main_thread()
        return [check(gold, pred, 10 if main else None) for gold, pred in pairs]


def get_checker():
    return _InProcessChecker()
'''

# Components fill left-out parameters from their ParamSpecs (registry-only, left out here); the
# exported module always passes every parameter, the spec's validated values.
_GIVEN_PARAMS = """
PARAMS = ()


def with_defaults(_specs, given):
    return dict(given)
"""

# The python component's user code travels as a string literal in ``_ENABLED``; this class runs
# it in the importing process, on the first call (the app ran it in a child process with time
# and memory limits, which a standalone module leaves to the user's own script). Its values are
# read as the app reads them (``read_values``): a raise or a bad value leaves the batch unscored.
_PYTHON_CODE = '''
class PythonCode(RewardComponent):
    """Your own reward(completions, **columns), exported as text and run in this process."""

    component = "python"

    def __init__(self, name=None, *, code, path="", timeout_s=None, memory_mb=None):
        super().__init__(name)
        self.code = code
        self._reward = None

    def __getstate__(self):
        return {**self.__dict__, "_reward": None}

    def judge(self, texts, ctx):
        columns = {k: ctx.column(k) for k in ctx.columns}
        if ctx.prompts is not None:
            columns["prompts"] = list(ctx.prompts)
        try:
            if self._reward is None:
                namespace = {"__name__": "__reward__"}
                exec(compile(self.code, f"<reward {self.__name__}>", "exec"), namespace)
                if not callable(namespace.get("reward")):
                    raise NameError("the code defines no function named 'reward'")
                self._reward = namespace["reward"]
            values = self._reward(texts, **columns)
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"[:500]
            why = f"python component {self.__name__!r}: reward() raised {detail}"
            return [Judgement(None, why) for _ in texts]
        try:
            return read_values(self.__name__, values, len(texts))
        except UserCodeError as err:
            return [Judgement(None, str(err)) for _ in texts]
'''

_CLASSES = {
    "correctness": "Correctness",
    "format": "Format",
    "reasoning_steps": "ReasoningSteps",
    "repetition": "Repetition",
    "conciseness": "Conciseness",
    "language": "Language",
    "rule": "Rule",
    "relative_length": "RelativeLength",
    "code_format": "CodeFormat",
    "similarity": "Similarity",
    "reward_model": "RewardModel",
    "judge": "Judge",
    "python": "PythonCode",
    "tool_format": "ToolFormat",
    "tool_errors": "ToolErrors",
    "tool_budget": "ToolBudget",
    "tool_answer": "ToolAnswer",
}


_THIRD_PARTY = ("math_verify", "numpy", "py3langid", "re2")


def _strip(path: str, imports: set[str]) -> str:
    """A module's source without its docstring, imports and registry-only parts.

    Its imports of public libraries are added to ``imports`` (to be hoisted to the top).
    """
    source = (_ROOT / path).read_text()
    tree = ast.parse(source)
    drop: list[tuple[int, int]] = []
    for i, node in enumerate(tree.body):
        is_doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        is_ours = isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rewards")
        is_import = isinstance(node, ast.Import | ast.ImportFrom)
        if is_import and not (is_future or is_ours):
            for alias in node.names:
                name = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
                module = node.module if isinstance(node, ast.ImportFrom) else ""
                imports.add(f"{module}:{name}")
        names = set()
        if isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = {node.target.id}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = {node.name}
        if is_doc or is_import or names & _REGISTRY_ONLY:
            start = node.lineno
            if getattr(node, "decorator_list", None):
                start = min(d.lineno for d in node.decorator_list)
            drop.append((start, node.end_lineno or node.lineno))
    lines = source.splitlines()
    keep = [line for n, line in enumerate(lines, start=1) if not any(a <= n <= b for a, b in drop)]
    return "\n".join(keep).strip("\n")


def _check_unique_names(source: str) -> None:
    seen: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            name = node.name
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            name = node.targets[0].id
        else:
            continue
        if name in seen and name not in ("_LOCK", "logger"):
            raise RuntimeError(
                f"exported module defines {name!r} twice (lines {seen[name]}, {node.lineno})"
            )
        seen[name] = node.lineno


def _import_block(imports: set[str]) -> str:
    """``module:name`` entries ("" module: plain import) as isort-style import lines."""
    plain: dict[str, list[str]] = {}
    from_: dict[str, list[str]] = {}
    for entry in imports:
        module, name = entry.split(":")
        if module:
            from_.setdefault(module, []).append(name)
        else:
            plain.setdefault(name.split()[0], []).append(name)
    sections: dict[bool, list[tuple[bool, str, str]]] = {False: [], True: []}
    for root, names in plain.items():
        for name in names:
            sections[root.split(".")[0] in _THIRD_PARTY].append((False, root, f"import {name}"))
    for module, names in from_.items():
        joined = ", ".join(sorted(set(names)))
        line = f"from {module} import {joined}"
        sections[module.split(".")[0] in _THIRD_PARTY].append((True, module, line))
    blocks = ["\n".join(line for *_, line in sorted(sections[k])) for k in (False, True)]
    return "\n\n".join(b for b in blocks if b)


def _literal(value: object) -> str:
    """``value`` as Python literal source, checked to read back as the same data.

    User text (descriptions, rule patterns, labels) enters the module only this way: ``repr``
    escapes quotes, backslashes, newlines, NUL and surrogates, so no value can end its string
    and become code; ``ast.literal_eval`` proves the source is a literal before it is written.
    """
    source = pprint.pformat(value, indent=1, width=96, sort_dicts=False)
    if ast.literal_eval(source) != value:
        raise ValueError("a spec value does not survive as a Python literal")
    return source


def export_module(spec: RewardSpec, module_name: str = "reward_studio_reward") -> str:
    """The source of a standalone module computing ``spec``'s reward for TRL.

    The module defines ``reward_funcs`` and ``reward_weights`` (pass them to ``GRPOTrainer`` /
    ``RLOOTrainer``), ``SPEC`` (the spec as a dict), ``score(completions, step=None,
    **columns)`` (the weighted totals, ``None`` where no component scored; ``step``: with the
    weights in force at that training step), ``weights_at(step)`` and
    ``schedule_callback(trainer)`` (a TRL callback that applies the weight schedules).
    """
    if not module_name.isidentifier():
        raise ValueError(f"module_name must be a Python identifier, got {module_name!r}")
    enabled = [
        {
            "name": name,
            "component": comp.name,
            "weight": comp.weight,
            "params": comp.params,
            "schedule": comp.schedule.to_dict() if comp.schedule else None,
        }
        for name, comp in spec.enabled_components()
    ]
    for entry in enabled:
        if entry["component"] not in _CLASSES:
            raise RewardSpecError(
                "components", f"component {entry['component']!r} cannot be exported yet"
            )
        if entry["component"] == "python" and entry["params"]["path"]:
            # the file's code is embedded, so the module runs without the file
            code = _read_user_code(entry["params"]["path"])
            entry["params"] = {**entry["params"], "code": code, "path": ""}
    parts = []
    imports = {":threading"}
    for entry in _MODULES:
        if entry == "@in_process_checker":
            parts.append(_IN_PROCESS_CHECKER.strip("\n"))
        elif entry == "@given_params":
            parts.append(_GIVEN_PARAMS.strip("\n"))
        elif entry == "@python_code":
            parts.append(_PYTHON_CODE.strip("\n"))
        else:
            parts.append(f"# --- from Reward Studio rewards/{entry} ---\n" + _strip(entry, imports))
    body = "\n\n\n".join(parts)
    header = f'''"""{module_name}: a reward exported from Reward Studio.

What it rewards is in ``DESCRIPTION``; its components, weights and parameters are in ``SPEC``.

Use it in a TRL (1.16) script:

    from {module_name} import reward_funcs, reward_weights, schedule_callback
    trainer = GRPOTrainer(model=..., train_dataset=..., reward_funcs=reward_funcs,
                          args=GRPOConfig(..., reward_weights=reward_weights))
    trainer.add_callback(schedule_callback(trainer))  # only where SPEC has weight schedules

``weights_at(step)`` gives the weights in force at a training step (the first step is 1);
``schedule_callback`` sets ``trainer.reward_weights`` to them before each step, so TRL's
advantages and its logged ``reward`` use them. ``score(completions, step=s, **columns)``
totals with the weights of step ``s``.

The dataset needs the gold-answer column the components read (``answer`` by default).
Requires: math-verify, py3langid, google-re2, numpy (and jieba for Chinese repetition;
rouge-score, sacrebleu or sentence-transformers for similarity; torch and transformers for
a reward model).
"""

from __future__ import annotations

{_import_block(imports)}
'''
    footer = f'''

# --- the reward ---

DESCRIPTION = {_literal(spec.description or "A weighted reward.")}

SPEC = {_literal(spec.to_dict())}

_ENABLED = {_literal(enabled)}

_CLASSES = {{
{"".join(f"    {k!r}: {v},{chr(10)}" for k, v in _CLASSES.items())}}}


def build_reward_funcs():
    """One reward function per enabled component, and their weights at the first step."""
    funcs = [_CLASSES[e["component"]](e["name"], **e["params"]) for e in _ENABLED]
    return funcs, weights_at(1)


{_SCHEDULE_SOURCE}

def weights_at(step):
    """The components' weights in force at training step ``step`` (the first step is 1)."""
    return [scheduled_weight(e["weight"], e["schedule"], step) for e in _ENABLED]


def schedule_callback(trainer):
    """A TRL callback that sets ``trainer.reward_weights`` to ``weights_at(step)`` before each
    step (``step = state.global_step + 1``)."""
    import torch
    from transformers import TrainerCallback

    class WeightSchedule(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            values = torch.tensor(weights_at(state.global_step + 1), dtype=torch.float32)
            trainer.reward_weights.copy_(values.to(trainer.reward_weights.dtype))

    return WeightSchedule()


reward_funcs, reward_weights = build_reward_funcs()


def score(completions, step=None, **kwargs):
    """Weighted totals as TRL aggregates them: None components skipped; all None gives None.
    ``step``: use the weights in force at that training step."""
    totals = [0.0] * len(completions)
    scored = [False] * len(completions)
    weights = reward_weights if step is None else weights_at(step)
    for fn, weight in zip(reward_funcs, weights, strict=True):
        for i, value in enumerate(fn(completions, **kwargs)):
            if value is not None:
                totals[i] += weight * value
                scored[i] = True
    return [t if s else None for t, s in zip(totals, scored, strict=True)]
'''
    source = re.sub(r"\n{4,}", "\n\n\n", header + "\n\n" + body + "\n" + footer)
    _check_unique_names(source)
    json.dumps(enabled)  # parameters are plain data
    return source
