"""A user's own Python module of tool functions, run in a child process with limits.

Only when the app or CLI was started with ``STUDIO_ALLOW_CODE=1`` (the gate of the ``python``
reward component, :mod:`rewards.components.python_code`; never on a public app without a
login), and only a file this process may read (uploads, from the web). The module is never
imported here: a child process started as the reward runner is (``python -I``, no secrets in
its environment, a temporary folder, limits on memory, CPU time and file size, a wall-clock
deadline, its whole process group killed after) lists its public functions once
(:meth:`UserToolModule.describe`) and runs each call (:meth:`UserToolModule.call`). A tool
that loops, raises, crashes or runs out of memory ends that call with a :class:`ToolError`.

Each function needs type hints (str, int, float, bool, list, dict) and a Google-style docstring
with an ``Args:`` section: TRL builds the JSON schema the model sees from them.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.tools.errors import ToolError
from rewards.components.python_code import path_allowed, run_child

_RUNNER = Path(__file__).with_name("_tool_runner.py")
MAX_MODULE_BYTES = 400_000
_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}


class ToolModuleError(ValueError):
    """The module cannot be used as tools; the message says why."""


@dataclass(frozen=True)
class ToolSpec:
    """One public function of the module: its name, docstring and parameters."""

    name: str
    doc: str
    params: tuple[tuple[str, str, bool], ...]  # (name, type name, required)


class UserToolModule:
    """The tool functions of the ``.py`` file ``path``, each call in a limited child process."""

    def __init__(self, path: str, timeout_s: float = 5.0, memory_mb: int = 1024) -> None:
        if not path_allowed(path):
            raise ToolModuleError("must be a file uploaded here; other server paths are not read")
        file = Path(path).expanduser()
        try:
            if file.stat().st_size > MAX_MODULE_BYTES:
                raise ToolModuleError(f"{path}: larger than {MAX_MODULE_BYTES:,} bytes")
            self.code = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ToolModuleError(f"cannot read {path}: {err}") from None
        try:
            ast.parse(self.code)  # parsing runs nothing
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            raise ToolModuleError(f"{path} is not valid Python: {err}") from None
        self.filename = str(file.resolve())
        self.timeout_s, self.memory_mb = timeout_s, memory_mb

    def describe(self) -> list[ToolSpec]:
        """The module's public functions; :class:`ToolModuleError` when it defines none usable."""
        try:
            reply = self._run({"mode": "describe"})
        except ToolError as err:
            raise ToolModuleError(f"loading the module failed: {err}") from None
        specs = [
            ToolSpec(
                t["name"],
                t["doc"],
                tuple((p["name"], p["type"], p["required"]) for p in t["params"]),
            )
            for t in reply["tools"]
        ]
        if not specs:
            raise ToolModuleError("the module defines no public function")
        return specs

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """``name(**arguments)`` in a child process: its result as text, else :class:`ToolError`."""
        return self._run({"mode": "call", "name": name, "arguments": arguments})["result"]

    def _run(self, request: dict[str, Any]) -> dict[str, Any]:
        request |= {
            "code": self.code,
            "filename": self.filename,
            "memory_mb": self.memory_mb,
            "cpu_s": max(1, math.ceil(self.timeout_s)),
        }
        try:
            text = json.dumps(request)
        except (TypeError, ValueError):
            raise ToolError("arguments must be JSON values") from None
        stdout, stderr, returncode = run_child(text, self.timeout_s, _RUNNER)
        if returncode is None or returncode == -signal.SIGXCPU:  # the deadline, or CPU limit
            raise ToolError(f"did not finish within {self.timeout_s:g} s; it was stopped")
        try:
            reply = json.loads(stdout) if stdout else None
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            tail = (stderr.strip().splitlines() or [""])[-1][:200]
            raise ToolError(
                f"the tool process ended (exit code {returncode}) without a result; memory "
                f"limit {self.memory_mb} MB. {tail}".rstrip()
            )
        if "error" in reply:
            raise ToolError(str(reply["error"]))
        return reply


def tool_methods(module: UserToolModule, specs: list[ToolSpec]) -> dict[str, Callable[..., str]]:
    """A Toolbox method per function: its name, parameters and docstring are the user's (TRL's
    schema), its body a call through the toolbox's budget into the child process."""
    return {spec.name: _method(module, spec) for spec in specs}


def _method(module: UserToolModule, spec: ToolSpec) -> Callable[..., str]:
    def method(self: Any, **arguments: Any) -> str:
        return self._call(lambda **a: module.call(spec.name, a), **arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    for name, type_name, required in spec.params:
        default = inspect.Parameter.empty if required else None
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=_TYPES[type_name]
            )
        )
        annotations[name] = _TYPES[type_name]
    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = spec.doc
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method
