"""The Runs view's samples table: the samples of one (run, step), one column per component, with
each group's reward spread above it and a filter (zero-variance groups, wrong answers, truncated
completions: :mod:`ui.runs.sample_groups`).

The table is keyed by (run, step) (:attr:`ui.runs.state.RunView.samples_key`) and the filter,
not drawn by the step picker's change event: two runs often share a step number, and switching
between them left the picker's value as it was, so its change never fired and the previous run's
samples stayed under the new run's header. Each poll, pick and filter draws the tables when the
key moved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gradio as gr

from storage.sqlite.db import Database
from ui.access.identity import Viewer, viewer_for
from ui.runs import actions as run_actions
from ui.runs.sample_groups import (
    GROUP_HEADERS,
    SAMPLE_FILTERS,
    group_spreads,
    groups_note,
    shown_samples,
)
from ui.runs.state import RunView
from ui.shared.context import AppContext
from ui.shared.named_values import Updates

if TYPE_CHECKING:
    from ui.runs.layout import RunsParts

FIXED_COLUMNS = 7  # group, prompt, completion, answer, total, advantage ... why
# group, prompt, completion, answer, total, advantage ("advantage" whole beside its menu button)
FIXED_WIDTHS = ["64px", "170px", "340px", "80px", "72px", "108px"]
WHY_WIDTH = "300px"
CHAR_PX, MENU_PX, MIN_COMPONENT_PX = 9, 40, 84  # a header's character (0.85em) and menu button


def table_value(headers: list[str], rows: list) -> gr.Dataframe:
    """The samples table of ``headers`` and ``rows`` (:func:`ui.runs.actions.table_of`)."""
    if len(headers) < FIXED_COLUMNS:  # no samples: the placeholder headers
        return gr.Dataframe(value=rows, headers=headers)
    components = headers[FIXED_COLUMNS - 1 : -1]
    datatypes = ["number", "str", "html", "str", "str", "str"]
    datatypes += ["str"] * len(components) + ["str"]
    return gr.Dataframe(
        value=rows, headers=headers, datatype=datatypes, column_widths=column_widths(components)
    )


def step_tables(
    db: Database, viewer: Viewer, parts: RunsParts, key: tuple[str, int] | None, show: str
) -> Updates:
    """The groups' spread, the line over them and the samples ``show`` keeps, at ``key``."""
    run_id, step = key if key is not None else (None, None)
    samples, run = run_actions.step_samples(db, viewer, run_id, step)
    if run is None:
        headers, rows = run_actions.NO_SAMPLES
    else:
        headers, rows = run_actions.table_of(
            shown_samples(samples, show, run_actions.max_tokens(run))
        )
    return {
        parts.samples: table_value(headers, rows),
        parts.groups: gr.Dataframe(
            value=[g.row() for g in group_spreads(samples)], headers=GROUP_HEADERS
        ),
        parts.groups_note: groups_note(samples, len(rows), show, run_actions.max_tokens(run)),
    }


def column_widths(components: list[str]) -> list[str]:
    """Widths in px: each component's column as wide as its name beside the header's menu
    button, the explanations readable. Shares of the box (which once added up to more than
    100% past three components) cut "correctness" to "correc"; a table wider than its box
    scrolls instead."""
    named = [f"{max(MIN_COMPONENT_PX, CHAR_PX * len(name) + MENU_PX)}px" for name in components]
    return [*FIXED_WIDTHS, *named, WHY_WIDTH]


def samples_updates(
    db: Database, viewer: Viewer, parts: RunsParts, view: RunView, echo_step: bool = False
) -> Updates:
    """The samples table, when the view's (run, step) is not the one it shows (the caller holds
    the view's lock); ``echo_step`` also writes the view's step into the picker."""
    out: Updates = {}
    if echo_step:
        out[parts.step_select] = gr.Dropdown(value=view.sample_step)
    key = view.samples_key
    drawn = None if key is None else (*key, view.sample_filter)
    if drawn != view.samples_shown:
        out.update(step_tables(db, viewer, parts, key, view.sample_filter))
        view.samples_shown = drawn
    return out


def wire_samples(ctx: AppContext, parts: RunsParts) -> None:
    """A step or filter picked by the user shows its samples; a step the poll moved to is drawn
    by the poll (``.input``, not ``.change``: the poll's own writes fire nothing here)."""

    def pick(
        view: RunView, step: Any, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        viewer = viewer_for(request, profile)
        with view.lock:
            view.pick_sample_step(step)  # a step that is not this run's leaves the view's
            # The picker gets the view's step back: a tick that left before this pick may
            # have written the step it knew after the user moved the picker.
            return samples_updates(ctx.db, viewer, parts, view, echo_step=True)

    parts.step_select.input(
        pick,
        inputs=[parts.view, parts.step_select],
        outputs=[parts.step_select, parts.samples, parts.groups, parts.groups_note],
        api_visibility="private",
        show_progress="hidden",
    )

    def pick_filter(
        view: RunView, show: Any, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        viewer = viewer_for(request, profile)
        with view.lock:
            view.sample_filter = show if show in SAMPLE_FILTERS else SAMPLE_FILTERS[0]
            return samples_updates(ctx.db, viewer, parts, view)

    parts.sample_filter.input(
        pick_filter,
        inputs=[parts.view, parts.sample_filter],
        outputs=[parts.samples, parts.groups, parts.groups_note],
        api_visibility="private",
        show_progress="hidden",
    )
