"""Runs a user's tool module in this (child) process; started by :mod:`engine.tools.user_module`.

Reads one JSON request from stdin: ``{"mode": "describe" | "call", "code", "filename",
"memory_mb", "cpu_s", "name", "arguments"}``; limits its own address space, CPU time and file
size before the user's code runs (as the reward runner does); writes one JSON reply to the
original stdout. ``describe``: the module's public functions with their docstrings and
parameters (``{"tools": [...]}``); ``call``: ``{"result": text}`` or ``{"error": "..."}``.
Standard library only: it is started with ``python -I``.
"""

import inspect
import json
import os
import resource
import sys

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_RESULT_CHARS = 500
_TYPES = {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "dict"}


def _limit(memory_mb: int, cpu_s: int) -> None:
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))


def _tools(namespace: dict) -> list:
    out = []
    for name, fn in namespace.items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != "__tools__":
            continue
        params = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                raise TypeError(f"{name}: parameter {p.name} must be a named parameter")
            hint = _TYPES.get(p.annotation)
            if hint is None:
                raise TypeError(
                    f"{name}: parameter {p.name} needs a type hint of str, int, float, bool, "
                    "list or dict"
                )
            params.append({"name": p.name, "type": hint, "required": p.default is p.empty})
        out.append({"name": name, "doc": inspect.getdoc(fn) or "", "params": params})
    return out


def main() -> None:
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # the user's prints go to stderr
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.read())
    _limit(request["memory_mb"], request["cpu_s"])
    try:
        namespace: dict = {"__name__": "__tools__", "__file__": request["filename"]}
        exec(compile(request["code"], request["filename"], "exec"), namespace)
        if request["mode"] == "describe":
            reply = {"tools": _tools(namespace)}
        else:
            fn = namespace.get(request["name"])
            if not inspect.isfunction(fn):
                raise NameError(f"the module defines no tool {request['name']!r}")
            reply = {"result": str(fn(**request["arguments"]))[:MAX_RESULT_CHARS]}
    except MemoryError:
        reply = {"error": f"ran out of memory (limit {request['memory_mb']} MB)"}
    except BaseException as exc:  # every failure becomes the call's error
        reply = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    os.write(reply_fd, json.dumps(reply).encode())


if __name__ == "__main__":
    main()
