"""The toolbox class of a run's ``tools:`` section: built-in tools and the user's own module,
each tool's JSON schema checked as TRL will build it, every problem a :class:`ConfigError`."""

from __future__ import annotations

from transformers.utils.chat_template_utils import (
    DocstringParsingException,
    TypeHintParsingException,
    get_json_schema,
)

from engine.config.tools import ToolSettings
from engine.fields import ConfigError
from engine.tools.toolbox import Toolbox, toolbox_class
from engine.tools.user_module import ToolModuleError, UserToolModule, tool_methods


def toolbox_for(settings: ToolSettings) -> type[Toolbox]:
    """The :class:`Toolbox` subclass offering ``settings``' tools (TRL's environment factory).

    Raises:
        ConfigError: on ``tools.python_module`` when the user's module cannot serve as tools
            (unreadable, a function without type hints or an ``Args:`` docstring, a name taken).
    """
    field = "tools.python_module"
    more = {}
    if settings.python_module:
        try:
            module = UserToolModule(settings.python_module, settings.python_timeout_s)
            more = tool_methods(module, module.describe())
        except ToolModuleError as err:
            raise ConfigError(field, str(err)) from None
    try:
        box = toolbox_class(settings.builtin, settings.max_tool_calls, more)
    except ValueError as err:
        raise ConfigError(field, str(err)) from None
    for name in more:
        try:
            get_json_schema(getattr(box, name))
        except (DocstringParsingException, TypeHintParsingException) as err:
            raise ConfigError(field, f"function {name}: {err}") from None
    return box
