"""A user's own tool module: gated like the python reward, each call in a limited child process,
and a tool that loops, raises or eats memory ends only that call (issue 24)."""

from __future__ import annotations

import textwrap

import pytest
from transformers.utils import get_json_schema

from engine.config.run_config import RunConfig
from engine.config.toolbox import toolbox_for
from engine.fields import ConfigError
from engine.tools.errors import ToolError

MODULE = '''
import time


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first one.
        b: The second one.
    """
    return a + b


def spin(seconds: float = 100.0) -> str:
    """Busy-wait.

    Args:
        seconds: How long.
    """
    while True:
        pass


def sleep() -> str:
    """Sleep far past the deadline."""
    time.sleep(100)


def fail(why: str) -> str:
    """Raise.

    Args:
        why: The message.
    """
    raise ValueError(why)


def hog() -> str:
    """Allocate 4 GB."""
    return str(len(bytearray(4 * 1024**3)))


def _helper() -> None:
    pass
'''


@pytest.fixture
def allow_code(monkeypatch):
    monkeypatch.setenv("STUDIO_ALLOW_CODE", "1")


def settings(tmp_path, code: str = MODULE, **more):
    path = tmp_path / "my_tools.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    data = {"tools": {"python_module": str(path), "python_timeout_s": 2, **more}}
    return RunConfig.from_dict(data).tools


def test_without_the_flag_a_tool_module_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.delenv("STUDIO_ALLOW_CODE", raising=False)
    with pytest.raises(ConfigError) as err:
        settings(tmp_path)
    assert err.value.field == "tools.python_module"
    assert "STUDIO_ALLOW_CODE=1" in err.value.reason


def test_the_modules_public_functions_become_tools_with_their_own_schema(tmp_path, allow_code):
    box = toolbox_for(settings(tmp_path, max_tool_calls=10))()
    box.reset()
    assert not hasattr(box, "_helper")
    schema = get_json_schema(box.add)["function"]
    assert schema["name"] == "add" and schema["description"] == "Add two integers."
    assert schema["parameters"]["properties"]["a"] == {
        "type": "integer",
        "description": "The first one.",
    }
    assert schema["parameters"]["required"] == ["a", "b"]
    assert box.add(a=2, b=3) == "5"


@pytest.mark.reliability
@pytest.mark.parametrize(
    ("tool", "arguments", "why"),
    [
        ("spin", {}, "did not finish within 2 s"),
        ("sleep", {}, "did not finish within 2 s"),
        ("fail", {"why": "no"}, "ValueError: no"),
        ("hog", {}, "ran out of memory"),
        ("add", {"a": 1}, "missing 1 required positional argument: 'b'"),
    ],
)
def test_a_tool_that_loops_raises_or_eats_memory_ends_only_that_call(
    tmp_path, allow_code, tool, arguments, why
):
    box = toolbox_for(settings(tmp_path, max_tool_calls=10))()
    box.reset()
    with pytest.raises(ToolError, match=why):
        getattr(box, tool)(**arguments)
    assert box.add(a=1, b=1) == "2"  # the rollout goes on


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("def f(x):\n    return x\n", "parameter x needs a type hint"),
        ("def f(x: int) -> int:\n    return x\n", "function f: "),
        ("x = 1\n", "defines no public function"),
        ('def reset(seed: int) -> str:\n    """Reset."""\n', "taken"),
        ("def f(:\n", "not valid Python"),
        ("raise SystemExit('at import')\n", "loading the module failed"),
    ],
)
def test_a_module_that_cannot_serve_as_tools_is_refused_by_field(tmp_path, allow_code, code, why):
    with pytest.raises(ConfigError) as err:
        toolbox_for(settings(tmp_path, code))
    assert err.value.field == "tools.python_module"
    assert why in err.value.reason
