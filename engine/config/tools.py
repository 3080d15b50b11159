"""The ``tools:`` section of a run config: which tools the model may call during a rollout.

Built-in tools only (:mod:`engine.tools`), each safe on a public server: ``calculator``
(arithmetic parsed with ``ast``, bounded), ``convert_units`` (a fixed unit table) and ``lookup``
(the row's own ``context_column``). A user's Python module of tools is refused by name in this
phase (issue 24, phase 1): it needs the child process with time and memory limits that the
``python`` reward component runs in, not yet built for tools.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config.fields import ConfigError, check_fields, knob
from engine.tools.toolbox import BUILTIN_TOOLS

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
        "", help="A Python module of your own tool functions (not available yet: leave empty)."
    )

    def __post_init__(self) -> None:
        check_fields(self, "tools")
        repeated = sorted({n for n in self.builtin if self.builtin.count(n) > 1})
        if repeated:
            raise ConfigError("tools.builtin", f"lists {', '.join(repeated)} more than once")
        if not self.context_column.strip():
            raise ConfigError("tools.context_column", "must name a dataset column")
        if self.python_module:
            raise ConfigError(
                "tools.python_module",
                "your own tool modules are not available yet (only built-in tools: "
                f"{', '.join(TOOL_NAMES)}); leave it empty",
            )

    @property
    def lookup_column(self) -> str | None:
        """The column each row must carry as its ``context`` (when the lookup tool is on)."""
        return self.context_column if "lookup" in self.builtin else None

    @property
    def enabled(self) -> bool:
        """Whether the run offers any tool."""
        return bool(self.builtin)
