"""The ``tools:`` section of a run config: which tools the model may call during a rollout.

Built-in tools only (:mod:`engine.tools`), each safe on a public server: ``calculator``
(arithmetic parsed with ``ast``, bounded), ``convert_units`` (a fixed unit table) and ``lookup``
(the row's own ``context_column``). A user's own module of tool functions
(``python_module``, :mod:`engine.tools.user_module`) runs each call in a child process with
limits, and only where the ``python`` reward component may run (``STUDIO_ALLOW_CODE=1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.fields import ConfigError, check_fields, knob
from engine.tools.toolbox import BUILTIN_TOOLS
from rewards.components.python_code import ALLOW_CODE_ENV, code_enabled

TOOL_NAMES = tuple(BUILTIN_TOOLS)


@dataclass
class ToolSettings:
    """Tools the model may call in a rollout (GRPO only); empty ``builtin`` = no tools."""

    builtin: list[str] = knob(  # noqa: RUF009 - knob returns a dataclasses.field
        help=(
            f"Built-in tools offered to the model: {', '.join(TOOL_NAMES)}; empty = none. "
            "Needs grpo and a chat template that renders tool calls (Qwen2.5/Qwen3-style)."
        ),
        choices=TOOL_NAMES,
        default_factory=list,
    )
    max_tool_calls: int = knob(
        4,
        help="Most tool calls in one rollout; later calls get a tool error.",
        lo=1,
        hi=32,
    )
    context_column: str = knob(
        "context",
        help=(
            "The data file's column the lookup tool reads, row by row (a mapping, or lines "
            "of key: value)."
        ),
    )
    python_module: str = knob(
        "",
        help=(
            "A .py file of your own tool functions (type hints and an Args docstring each), "
            f"each call run in a child process with limits; needs {ALLOW_CODE_ENV}=1."
        ),
    )
    python_timeout_s: float = knob(
        5.0, help="Wall-clock limit of one call of your own tools, seconds.", lo=0.5, hi=60
    )

    def __post_init__(self) -> None:
        check_fields(self, "tools")
        repeated = sorted({n for n in self.builtin if self.builtin.count(n) > 1})
        if repeated:
            raise ConfigError("tools.builtin", f"lists {', '.join(repeated)} more than once")
        if not self.context_column.strip():
            raise ConfigError("tools.context_column", "must name a dataset column")
        if self.python_module:
            self._check_module()

    def _check_module(self) -> None:
        if not code_enabled():
            raise ConfigError(
                "tools.python_module",
                f"your own tools run your own code and are disabled here; start the app or CLI "
                f"with {ALLOW_CODE_ENV}=1 to allow them (never on a public app without a login), "
                f"or use the built-in tools: {', '.join(TOOL_NAMES)}",
            )
        path = self.python_module
        if not path.endswith(".py") or ".." in Path(path).parts:
            raise ConfigError(
                "tools.python_module", f"must be a .py file without '..', got {path!r}"
            )

    @property
    def lookup_column(self) -> str | None:
        """The column each row must carry as its ``context`` (when the lookup tool is on)."""
        return self.context_column if "lookup" in self.builtin else None

    @property
    def enabled(self) -> bool:
        """Whether the run offers any tool."""
        return bool(self.builtin or self.python_module)
