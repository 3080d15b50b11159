"""Python: the user's own reward function, run in a child process with limits.

The user writes TRL's reward-function convention (TRL ``GRPOTrainer`` ``reward_funcs``; open-r1
``rewards.py``)::

    def reward(completions, **columns):  # completions: the completion texts
        return [1.0 if "thanks" in c else 0.0 for c in completions]

returning one ``float | None`` per completion (``None``: cannot score), or ``(score, why)``
pairs whose ``why`` goes into the trace. ``columns`` holds the dataset columns (``answer``...)
and ``prompts`` when known.

Each batch runs in a fresh ``python -I`` child (:mod:`._python_runner`) with an address-space
limit (``RLIMIT_AS``), a CPU-time limit and a wall-clock deadline, without the server's
secrets in its environment, in a temporary working folder. A raise, an endless loop, a crash,
a wrong-length or non-numeric return fails this component's scores for the batch (``None``
each, with one message naming the component), never the preview or the training step.

User code runs only when the app or CLI was started with ``STUDIO_ALLOW_CODE=1``; otherwise a
spec holding this component is refused at validation, so the form, the API and the CLI all
refuse it by name. A public app without a login clears the flag at startup
(:func:`enforce_code_policy`).
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.components.python_values import UserCodeError, read_values
from rewards.errors import RewardSpecError
from rewards.params import ComponentInfo, ParamSpec, describe_value, with_defaults

logger = logging.getLogger(__name__)

ALLOW_CODE_ENV = "STUDIO_ALLOW_CODE"
_TRUE = ("1", "true", "yes", "on")
_RUNNER = Path(__file__).with_name("_python_runner.py")
#: Longest code text accepted from a spec (characters); a file may be as long.
MAX_CODE_CHARS = 100_000
# Environment variables never passed to user code: hub tokens, API keys, passwords.
_SECRET_MARKERS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "STUDIO_AUTH", "CREDENTIAL")

PARAMS = (
    ParamSpec(
        "code",
        "str",
        "",
        "Python source defining reward(completions, **columns) (or leave empty and give path)",
        max_length=MAX_CODE_CHARS,
    ),
    ParamSpec(
        "path", "str", "", "a .py file defining reward(...) (instead of code)", max_length=4096
    ),
    ParamSpec(
        "timeout_s", "float", 30.0, "wall-clock limit per batch, seconds", min=0.5, max=600.0
    ),
    ParamSpec("memory_mb", "int", 2048, "memory limit of the child process, MB", min=64, max=65536),
)


def code_enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether user code may run in this process (``STUDIO_ALLOW_CODE=1``)."""
    env = os.environ if env is None else env
    return env.get(ALLOW_CODE_ENV, "").strip().lower() in _TRUE


def enforce_code_policy(env: MutableMapping[str, str], *, public: bool, login: bool) -> bool:
    """Clear ``STUDIO_ALLOW_CODE`` on a public app without a login; returns whether code runs.

    Run workers inherit the app's environment, so clearing it here disables code for them too.
    """
    if code_enabled(env) and public and not login:
        env.pop(ALLOW_CODE_ENV, None)
        logger.warning(
            "%s=1 ignored: this app is public and has no login (set STUDIO_AUTH)", ALLOW_CODE_ENV
        )
    return code_enabled(env)


# Which code files this process may read; the web app limits it to uploads
# (engine.config.input_policy).
_path_rule: Callable[[str], bool] | None = None


def restrict_code_paths(allowed: Callable[[str], bool] | None) -> None:
    """Limit the ``path`` files this process reads to those ``allowed`` accepts (None: any).

    The web app passes its input policy's rule, so a visitor cannot make the server read a
    file outside the uploads folder and the operator's data roots; the CLI reads any file.
    """
    global _path_rule
    _path_rule = allowed


def _defines_reward(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "reward":
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "reward" for t in targets):
                return True
        if isinstance(node, ast.ImportFrom | ast.Import) and any(
            (a.asname or a.name) == "reward" for a in node.names
        ):
            return True
    return False


def check_source(code: str, field: str) -> None:
    """Raise ``RewardSpecError`` on ``field`` unless ``code`` parses and defines ``reward``.

    Parsing (``ast.parse``) never runs the code.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise RewardSpecError(field, f"not valid Python: {err.msg} (line {err.lineno})") from None
    except (ValueError, RecursionError, MemoryError):
        raise RewardSpecError(field, "not valid Python source") from None
    if not _defines_reward(tree):
        raise RewardSpecError(field, "must define a function named reward(completions, **columns)")


def _check(params: Mapping[str, Any]) -> None:
    if not code_enabled():
        raise RewardSpecError(
            "",
            f"component 'python' runs your own code and is disabled here; start the app or "
            f"CLI with {ALLOW_CODE_ENV}=1 to allow it (never enabled on a public app "
            "without a login)",
        )
    code, path = params["code"], params["path"]
    if bool(code.strip()) == bool(path.strip()):
        raise RewardSpecError("code", "give either code or path (exactly one of the two)")
    if code.strip():
        check_source(code, "code")
    elif not path.endswith(".py") or ".." in Path(path).parts:
        raise RewardSpecError(
            "path", f"must be a .py file without '..', got {describe_value(path)}"
        )


def path_allowed(path: str) -> bool:
    """Whether this process may read the code file ``path`` (:func:`restrict_code_paths`)."""
    return _path_rule is None or _path_rule(path)


def read_path(path: str) -> str:
    """The code in the file ``path``, checked to parse and define ``reward``."""
    if not path_allowed(path):
        raise RewardSpecError(
            "path",
            "must be a file uploaded here; other server paths are not readable from the web "
            "(paste the code into the code field instead)",
        )
    try:
        file = Path(path).expanduser()
        if file.stat().st_size > MAX_CODE_CHARS * 4:
            raise RewardSpecError("path", f"{path}: larger than {MAX_CODE_CHARS * 4} bytes")
        code = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise RewardSpecError("path", f"cannot read {describe_value(path)}: {err}") from None
    check_source(code, "path")
    return code


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}


def run_child(
    request: str, timeout_s: float, runner: Path = _RUNNER
) -> tuple[str, str, int | None]:
    """Run ``runner`` (a standard-library script: the reward runner, or the tool runner of
    :mod:`engine.tools.user_module`) on ``request``; ``(stdout, stderr, exit code)``, code
    ``None`` on timeout.

    The child leads its own process group, so whatever it started is stopped with it when it
    ends or times out; it works in a fresh temporary folder, so files it writes never land in
    the server's folders. Its input and output go through files, not pipes: a process the user's
    code leaves behind would hold a pipe open, and the batch would wait for it.
    """
    with (
        tempfile.TemporaryDirectory(prefix="reward-code-") as cwd,
        tempfile.TemporaryDirectory(prefix="reward-io-") as io_dir,
    ):
        io = Path(io_dir)
        (io / "in").write_text(request, encoding="utf-8")
        with (
            open(io / "in", "rb") as stdin,
            open(io / "out", "wb") as stdout,
            open(io / "err", "wb") as stderr,
        ):
            child = subprocess.Popen(
                [sys.executable, "-I", str(runner)],
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env=_child_env(),
                start_new_session=True,
                cwd=cwd,
            )
            try:
                returncode: int | None = child.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                returncode = None
            with contextlib.suppress(ProcessLookupError):  # and whatever it left running
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        if returncode is None:
            return "", "", None
        return _tail(io / "out", 1 << 24), _tail(io / "err", 2000), returncode


def _tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of ``path`` as text (undecodable bytes replaced)."""
    with open(path, "rb") as file:
        file.seek(max(0, path.stat().st_size - limit))
        return file.read().decode("utf-8", errors="replace")


def _jsonable(values: Any) -> Any:
    """Column values as JSON holds them (other objects as their text)."""
    return json.loads(json.dumps(values, default=str))


class PythonCode(RewardComponent):
    component = "python"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        if not code_enabled():
            raise RewardSpecError("name", f"component 'python' needs {ALLOW_CODE_ENV}=1")
        code, path = p["code"], p["path"]
        self.code = code if code.strip() else read_path(path)
        self.filename = str(Path(path).expanduser().resolve()) if path.strip() else "<reward>"
        self.timeout_s = p["timeout_s"]
        self.memory_mb = p["memory_mb"]

    def run_batch(
        self, texts: list[str], columns: Mapping[str, Any], prompts: Any = None
    ) -> list[Judgement]:
        """Call the user's ``reward`` on one batch in a child process; raises UserCodeError."""
        name = self.__name__
        request = {
            "code": self.code,
            "filename": self.filename,
            "memory_mb": self.memory_mb,
            "cpu_s": max(1, math.ceil(self.timeout_s)),
            "completions": texts,
            "columns": _jsonable(
                {**columns, **({"prompts": list(prompts)} if prompts is not None else {})}
            ),
        }
        stdout, stderr, returncode = run_child(json.dumps(request), self.timeout_s)
        # The CPU limit is timeout_s rounded up, so a busy loop can meet it first (SIGXCPU):
        # the same time budget, said the same way.
        if returncode is None or returncode == -signal.SIGXCPU:
            raise UserCodeError(
                f"python component {name!r}: reward() did not finish within {self.timeout_s:g} s "
                "(timeout_s); it was stopped"
            )
        try:
            reply = json.loads(stdout) if stdout else None
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            tail = stderr.strip().splitlines()[-1:] or [""]
            raise UserCodeError(
                f"python component {name!r}: the child process ended (exit code "
                f"{returncode}) without a result; memory limit {self.memory_mb} MB, CPU "
                f"limit {request['cpu_s']} s. {tail[0][:300]}".rstrip()
            )
        if "error" in reply:
            raise UserCodeError(f"python component {name!r}: {reply['error']}")
        return read_values(name, reply.get("values"), len(texts))

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        columns = {k: ctx.column(k) for k in ctx.columns}
        try:
            return self.run_batch(texts, columns, ctx.prompts)
        except UserCodeError as err:
            logger.warning("%s", err)
            return [Judgement(None, str(err)) for _ in texts]


INFO = ComponentInfo(
    name="python",
    factory=PythonCode,
    params=PARAMS,
    description=(
        "Your own reward(completions, **columns) -> list of scores (or (score, why) pairs), "
        "run in a separate process with time and memory limits. Needs STUDIO_ALLOW_CODE=1."
    ),
    source="TRL GRPOTrainer reward_funcs convention (fn(completions, **kwargs) -> list[float])",
    check=_check,
)
