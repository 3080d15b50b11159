"""Gradio values carried by name: the types of handlers that take and return dicts.

Gradio passes a dict (component -> value) to a handler whose ``inputs`` is a set of components,
and accepts a dict of updates (component -> new value or ``gr.update``) as its return, leaving
every output not in the dict as it is. Tabs use these instead of positional tuples, so adding an
input never shifts another one's value.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.shared.messages import escape, warn

Values = dict[gr.components.Component, Any]  # what a handler gets for a set of inputs
Updates = dict[gr.components.Component, Any]  # what a handler returns: component -> new value


def error_line(elem_id: str, message: str = "", **drawn: Any) -> gr.Markdown:
    """The line under an input where its validation message shows (hidden while empty);
    ``drawn``: a ``gr.render`` key, for lines drawn again on each render."""
    return gr.Markdown(
        message, visible=bool(message), elem_classes="field-error", elem_id=elem_id, **drawn
    )


def show_error_at(errors: dict[str, gr.Markdown], where: str | None, message: object) -> Updates:
    """Updates that show ``message`` on the error line ``where`` and hide every other line
    (``where`` None: hide them all)."""
    return {
        md: gr.Markdown(value=warn(escape(message)), visible=True)
        if key == where
        else gr.Markdown(visible=False)
        for key, md in errors.items()
    }
