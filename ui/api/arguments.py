"""Calls that leave arguments out: a public endpoint takes its optional ones left out, as
``gradio_client`` does, and any event missing one it needs is told which, by name.

Gradio answers a call with too few values with ``error: null`` (a ``ValueError`` it hides
from the client): a raw HTTP caller of ``run_metrics`` with only its ``run_id`` learned
nothing. :class:`StudioBlocks` checks the count before Gradio does.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.blocks import BlockFunction
from gradio.utils import get_function_params


def _parameters(block_fn: BlockFunction) -> list[tuple[str, bool, Any]]:
    """``(name, has a default, default)`` per input of ``block_fn``: the function's own
    parameters where they line up one to one with its inputs, else the inputs' labels (no
    defaults)."""
    params = get_function_params(block_fn.fn) if block_fn.fn else []
    if not block_fn.inputs_as_dict and len(params) == len(block_fn.inputs):
        return [(name, has_default, default) for name, has_default, default, _ in params]
    return [
        (getattr(c, "label", None) or f"input {i + 1}", False, None)
        for i, c in enumerate(block_fn.inputs)
    ]


def complete_arguments(block_fn: BlockFunction, values: list[Any]) -> None:
    """Append to ``values`` the default of each trailing parameter a public endpoint was called
    without (its function's default, else its component's value), or raise a ``gr.Error``
    naming the parameters that have none."""
    params = _parameters(block_fn)
    public = block_fn.api_visibility == "public"
    given = len(values)
    missing = []
    for index in range(given, len(block_fn.inputs)):
        name, has_default, default = params[index]
        component_value = getattr(block_fn.inputs[index], "value", None)
        if public and has_default:
            values.append(default)
        elif public and component_value is not None:
            values.append(component_value)
        else:
            missing.append(name)
    if missing:
        endpoint = block_fn.api_name or block_fn.name or "this event"
        takes = ", ".join(name for name, _, _ in params)
        raise gr.Error(
            f"{endpoint}: {', '.join(missing)} missing (it takes {takes}; got {given} of "
            f"{len(params)} values)",
            print_exception=False,
        )


class StudioBlocks(gr.Blocks):
    """``gr.Blocks`` whose calls with arguments left out get defaults or a named error."""

    def validate_inputs(self, block_fn: BlockFunction, inputs: list[Any]) -> None:
        if len(inputs) < len(block_fn.inputs):
            complete_arguments(block_fn, inputs)  # Gradio reads this same list next
        super().validate_inputs(block_fn, inputs)
