"""Runs a user's reward function in this (child) process; started by :mod:`python_code`.

Reads one JSON request from stdin: ``{"code", "filename", "memory_mb", "cpu_s", "completions",
"columns"}``; limits its own address space (``RLIMIT_AS``), CPU time (``RLIMIT_CPU``) and file
size (``RLIMIT_FSIZE``) before the user's code runs; writes one JSON reply to the original
stdout: ``{"values": [...]}`` or ``{"error": "..."}``. The user's own ``print`` goes to stderr,
so it cannot corrupt the reply.
Standard library only: it is started with ``python -I`` (no cwd, no user site on the path).
"""

import json
import os
import resource
import sys
import traceback

#: Largest file the user's code may write, its printed output included.
MAX_FILE_BYTES = 64 * 1024 * 1024


def _limit(memory_mb: int, cpu_s: int) -> None:
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    # no file it writes (its printed output included) may fill the server's disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))


def _last_frame(exc: BaseException, filename: str) -> str:
    """``file:line`` of the deepest frame in the user's code, for the error message."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            where = f" (line {frame.lineno})"
    return where


def main() -> None:
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # the user's prints and C-level writes go to stderr
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.read())
    filename = request["filename"]
    if os.path.isabs(filename):
        sys.path.insert(0, os.path.dirname(filename))  # helper modules beside the file
    _limit(request["memory_mb"], request["cpu_s"])
    try:
        namespace: dict = {"__name__": "__reward__", "__file__": filename}
        exec(compile(request["code"], filename, "exec"), namespace)
        fn = namespace.get("reward")
        if not callable(fn):
            raise NameError("the code defines no function named 'reward'")
        values = fn(request["completions"], **request["columns"])
    except MemoryError:
        text = json.dumps({"error": f"ran out of memory (limit {request['memory_mb']} MB)"})
    except BaseException as exc:  # every failure becomes the component's message
        detail = f"{type(exc).__name__}: {exc}"[:500]
        text = json.dumps({"error": f"reward() raised {detail}{_last_frame(exc, filename)}"})
    else:
        try:
            text = json.dumps({"values": values}, default=_plain)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"error": f"reward() returned something that is not {exc}"})
    with os.fdopen(reply_fd, "w") as out:
        out.write(text)


def _plain(value: object) -> object:
    """Tuples, numpy numbers and arrays as JSON can hold them; anything else is refused."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple | set):
        return list(value)
    raise TypeError(f"a list of numbers (it holds a {type(value).__name__})")


if __name__ == "__main__":
    main()
