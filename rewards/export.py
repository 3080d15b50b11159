"""A RewardSpec as one standalone Python module for a user's own TRL script.

The module is assembled from the code the app runs: this library's own standalone sources
(text handling, answer extraction, math-verify checks, the batched language identifier, the
component classes), the composer's :func:`~rewards.composer.weighted_total` and the schedule's
:func:`~rewards.schedule.scheduled_weight`, then :mod:`rewards.export_runtime` (a real,
linted module: the exported ``score``, ``weights_at``, ``schedule_callback`` and the parts the
export runs its own way) with the spec's values written into its data slots. Each is inlined
by its syntax tree: its docstring, its imports of ``rewards`` and the registry-only
definitions left out, the public imports hoisted into one block (those the module reads), the
rest verbatim; the spec's data laid out as ruff formats it. So the exported reward computes
exactly what the app computes, and ruff passes on it (tests/rewards/test_export.py). It
imports only public libraries: math-verify, py3langid, numpy, google-re2 (``re2``) and the
standard library (components that need more import it where they use it: jieba,
rouge-score, sacrebleu, torch/transformers).

A ``python`` component's code (from its text, or read from its file now) is embedded as a
string literal and executed by the importing script on the component's first call, in that
process: the app's child-process time and memory limits do not travel with it. This is the
user's own code going to the user's own script; nothing runs while the module is written.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path

from rewards import export_runtime
from rewards.components.python_code import read_path as _read_user_code
from rewards.composer import weighted_total
from rewards.errors import RewardSpecError
from rewards.schedule import scheduled_weight
from rewards.spec import RewardSpec

_ROOT = Path(__file__).resolve().parent
LINE_LENGTH = 100

#: Sources included, in dependency order; the exported module's own parts last
#: (:mod:`rewards.export_runtime`, with the spec's data in its slots).
_MODULES = (
    "input_guards/describe.py",
    "verification/deadline.py",
    "completions/text.py",
    "verification/answers.py",
    "input_guards/safe_regex.py",
    "verification/mathcheck.py",
    "verification/verify.py",
    "completions/langid_batch.py",
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
    "completions/tool_calls.py",
    "components/tool_format.py",
    "components/tool_errors.py",
    "components/tool_budget.py",
    "components/tool_answer.py",
)
_RUNTIME = "export_runtime.py"
#: Single functions of modules not included whole (they need only the standard library);
#: their imports, for the hoisted import block.
_FUNCTIONS: tuple[tuple[Callable, tuple[str, ...]], ...] = (
    (scheduled_weight, (":math",)),
    (weighted_total, ("collections.abc:Sequence",)),
)

# Definitions that only describe components for the registry (forms, validation); the
# runtime part defines its own PARAMS.
_REGISTRY_ONLY = {"PARAMS", "INFO", "_check"}


def _strip(
    path: str,
    imports: set[str],
    drop: set[str] = _REGISTRY_ONLY,
    slots: Mapping[str, object] | None = None,
) -> str:
    """A module's source without its docstring, its imports and the definitions named in
    ``drop``; an assignment to a name in ``slots`` is written again with that value.

    Its imports of public libraries are added to ``imports`` (to be hoisted to the top).
    """
    source = (_ROOT / path).read_text()
    slots = slots or {}
    tree = ast.parse(source)
    spans: dict[int, tuple[int, str]] = {}  # first line -> (last line, replacement)
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
        start = node.lineno
        if getattr(node, "decorator_list", None):
            start = min(d.lineno for d in node.decorator_list)
        end = node.end_lineno or node.lineno
        if is_doc or is_import or names & drop:
            spans[start] = (end, "")
        elif len(names) == 1 and (name := next(iter(names))) in slots:
            spans[start] = (end, f"{name} = {_literal(slots[name], len(name) + 3)}")
    lines = source.splitlines()
    out: list[str] = []
    n = 1
    while n <= len(lines):
        if n in spans:
            end, text = spans[n]
            if text:
                out.append(text)
            n = end + 1
        else:
            out.append(lines[n - 1])
            n += 1
    return "\n".join(out).strip("\n")


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


def _used_names(source: str) -> set[str]:
    """Every name ``source`` reads (the root of each attribute chain included)."""
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


def _bound_name(entry: str) -> str:
    """The name an import entry (``module:name [as alias]``) binds."""
    module, name = entry.split(":")
    if " as " in name:
        return name.split(" as ")[1]
    return name if module else name.split(".")[0]


def _name_order(name: str) -> tuple[int, str]:
    """isort's order-by-type, as ruff sorts imported names: constants, classes, the rest."""
    bare = name.split(" as ")[0]
    rank = 0 if bare.isupper() and len(bare) > 1 else 1 if bare[:1].isupper() else 2
    return rank, bare.lower()


def _import_block(imports: set[str], used: set[str]) -> str:
    """The ``module:name`` entries (``""`` module: a plain import) that ``used`` reads, as the
    import sections ruff's isort writes: the standard library, then the rest; in each, plain
    imports, then ``from`` imports, by module."""
    plain: dict[bool, set[str]] = {False: set(), True: set()}
    from_: dict[bool, dict[str, set[str]]] = {False: {}, True: {}}
    for entry in imports:
        if _bound_name(entry) not in used:
            continue
        module, name = entry.split(":")
        third_party = (module or name).split(".")[0] not in sys.stdlib_module_names
        if module:
            from_[third_party].setdefault(module, set()).add(name)
        else:
            plain[third_party].add(name)
    blocks = []
    for third_party in (False, True):
        lines = [f"import {name}" for name in sorted(plain[third_party], key=str.lower)]
        for module in sorted(from_[third_party], key=str.lower):
            names = sorted(from_[third_party][module], key=_name_order)
            line = f"from {module} import {', '.join(names)}"
            if len(line) > LINE_LENGTH:
                line = f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"
            lines.append(line)
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _literal(value: object, prefix: int = 0) -> str:
    """``value`` (plain data) as Python literal source laid out as ruff formats it, on a line
    that already holds ``prefix`` columns; checked to read back as the same data.

    User text (descriptions, rule patterns, labels) enters the module only this way: each
    character is escaped as ``repr`` escapes it, so no value can end its string and become
    code; ``ast.literal_eval`` proves the source is a literal before it is written.
    """
    source = _layout(value, 0, LINE_LENGTH - prefix)
    if ast.literal_eval(source) != value:
        raise ValueError("a spec value does not survive as a Python literal")
    return source


def _layout(value: object, indent: int, room: int) -> str:
    """``value`` at ``indent``, where ``room`` columns are left on its first line. Containers
    one item a line with a trailing comma (ruff keeps them so)."""
    inner = " " * (indent + 4)
    if isinstance(value, dict) and value:
        items = []
        for k, v in value.items():
            key = _layout(k, indent + 4, LINE_LENGTH - indent - 4 - 1)
            left = LINE_LENGTH - indent - 4 - _columns(key) - 2 - 1  # ": " before, "," after
            items.append(f"{inner}{key}: {_layout(v, indent + 4, left)},\n")
        return "{\n" + "".join(items) + " " * indent + "}"
    if isinstance(value, list | tuple) and value:
        room_each = LINE_LENGTH - indent - 4 - 1
        items = [f"{inner}{_layout(v, indent + 4, room_each)},\n" for v in value]
        opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
        return opening + "\n" + "".join(items) + " " * indent + closing
    if isinstance(value, str):
        return _string(value, indent, room)
    if value is None or isinstance(value, bool | int | float | dict | list | tuple):
        return repr(value)
    raise ValueError(f"a spec value of type {type(value).__name__} is not plain data")


def _columns(text: str) -> int:
    """Display columns of ``text`` as ruff counts them (a wide character takes two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _string(text: str, indent: int, room: int) -> str:
    """A string literal whole where it fits in ``room`` columns; else parenthesised pieces,
    one a line at ``indent + 4``, each within the line limit (ruff joins pieces only where the
    whole fits). Each literal in double quotes, single where that escapes fewer, as ruff
    prefers for each piece."""
    whole = _quoted(text)
    if _columns(whole) <= room:
        return whole
    width = LINE_LENGTH - indent - 4 - 2
    pieces: list[str] = [""]
    used = 0
    for c in text:
        columns = 2 if c in "'\"" else _columns(_quoted(c)) - 2  # a quote may need escaping
        if used + columns > width:
            pieces.append("")
            used = 0
        pieces[-1] += c
        used += columns
    inner = " " * (indent + 4)
    return "(\n" + "".join(f"{inner}{_quoted(p)}\n" for p in pieces) + " " * indent + ")"


def _quoted(text: str) -> str:
    """``text`` as one string literal: every character escaped as ``repr`` escapes it."""
    quote = "'" if text.count('"') > text.count("'") else '"'

    def escaped(c: str) -> str:
        if c in "\\" + quote:
            return "\\" + c
        if c in "'\"":
            return c  # the other quote needs no escape
        return repr(c)[1:-1]  # printable as itself, else its escape (\n, \x00, \u2028)

    return quote + "".join(escaped(c) for c in text) + quote


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
        if entry["component"] not in export_runtime.CLASSES:
            raise RewardSpecError(
                "components", f"component {entry['component']!r} cannot be exported yet"
            )
        if entry["component"] == "python" and entry["params"]["path"]:
            # the file's code is embedded, so the module runs without the file
            code = _read_user_code(entry["params"]["path"])
            entry["params"] = {**entry["params"], "code": code, "path": ""}
    json.dumps(enabled)  # parameters are plain data
    imports: set[str] = set()
    parts = [
        f"# --- from Reward Studio rewards/{path} ---\n" + _strip(path, imports)
        for path in _MODULES
    ]
    for fn, needs in _FUNCTIONS:
        imports.update(needs)
        where = Path(inspect.getsourcefile(fn) or "").relative_to(_ROOT)
        parts.append(f"# --- from Reward Studio rewards/{where} ---\n" + inspect.getsource(fn))
    slots = {
        "DESCRIPTION": spec.description or "A weighted reward.",
        "SPEC": spec.to_dict(),
        "_ENABLED": enabled,
    }
    runtime = _strip(_RUNTIME, imports, drop=_REGISTRY_ONLY - {"PARAMS"}, slots=slots)
    parts.append(f"# --- the reward (Reward Studio rewards/{_RUNTIME}) ---\n" + runtime)
    body = re.sub(r"\n{4,}", "\n\n\n", "\n\n\n".join(p.strip("\n") for p in parts))
    source = _header(module_name) + _import_block(imports, _used_names(body)) + "\n\n" + body + "\n"
    _check_unique_names(source)
    return source


def _header(module_name: str) -> str:
    """The module's docstring (how to use it) and its future import."""
    return f'''"""{module_name}: a reward exported from Reward Studio.

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

'''
