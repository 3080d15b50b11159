"""The Runs view's tools for many runs: search, status filter and sort above the runs table, and
the open run's tags and note, editable and saved with the run.

Each handler works out the viewer from the request and reads or writes only that viewer's runs
(an admin's: any); another user's run reads like a missing one. Tags and notes are the user's
own text: bounded by :mod:`storage.labels` (the error names the field) and escaped when shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from storage import labels as label_store
from storage.runs import RunNotFoundError
from storage.sqlite.db import Database
from ui.access.identity import Viewer, viewer_for
from ui.runs.actions import RunActionError, owned_run
from ui.runs.poll import RUN_COLUMN_WIDTHS, RUN_COLUMNS
from ui.runs.run_filter import (
    ANY_STATUS,
    DEFAULT_SORT,
    MAX_QUERY_CHARS,
    SORTS,
    STATUS_CHOICES,
    RunFilter,
)
from ui.runs.state import RunView
from ui.shared.context import AppContext
from ui.shared.messages import escape, ok, warn


@dataclass
class FilterControls:
    """Search, status filter and sort of the runs table."""

    search: gr.Textbox
    status: gr.Dropdown
    sort: gr.Dropdown

    @property
    def inputs(self) -> list[gr.components.Component]:
        return [self.search, self.status, self.sort]

    def read(self, raw: dict) -> RunFilter:
        return RunFilter.from_inputs(raw[self.search], raw[self.status], raw[self.sort])


def build_filter_controls() -> FilterControls:
    with gr.Row(equal_height=True):
        search = gr.Textbox(
            label="Search runs",
            placeholder="name, id, algorithm, tag or note words",
            max_length=MAX_QUERY_CHARS,
            elem_id="runs-search",
            scale=3,
        )
        status = gr.Dropdown(
            label="Status", choices=STATUS_CHOICES, value=ANY_STATUS, elem_id="runs-status-filter"
        )
        sort = gr.Dropdown(
            label="Sort", choices=list(SORTS), value=DEFAULT_SORT, elem_id="runs-sort"
        )
    return FilterControls(search=search, status=status, sort=sort)


def build_runs_list() -> tuple[FilterControls, gr.Dataframe, gr.Markdown]:
    """The runs table with its search, filter and sort, spanning the page (in half of it, the
    table's last columns were cut off), and the line that says why it is empty."""
    with gr.Accordion("All runs (click a row to open it)", open=True, elem_id="runs-list"):
        finder = build_filter_controls()
        table = gr.Dataframe(
            headers=RUN_COLUMNS,
            value=[],
            interactive=False,
            show_label=False,
            elem_id="runs-table",
            max_height=360,
            wrap=True,
            column_widths=RUN_COLUMN_WIDTHS,
        )
        empty = gr.Markdown(elem_id="runs-table-empty")
    return finder, table, empty


def label_texts(db: Database, viewer: Viewer, run_id: str | None) -> tuple[str, str]:
    """The run's tags (comma-separated) and note, for the viewer's own run ("" for none)."""
    try:
        run = owned_run(db, viewer, run_id)
    except RunActionError:
        return "", ""
    label = label_store.label_of(db, run.id)
    return ("", "") if label is None else (", ".join(label.tags), label.note)


def save_label(
    db: Database, viewer: Viewer, run_id: str | None, tags: str, note: str
) -> tuple[str, str, str]:
    """Store the tags and note of the viewer's run; returns them as stored and a message.

    Raises :class:`RunActionError` naming the field that is over its bound."""
    run = owned_run(db, viewer, run_id)
    try:
        label = label_store.set_label(db, run.id, tags=tags, note=note, owner=viewer.scope)
    except label_store.LabelError as exc:
        raise RunActionError(str(exc)) from None
    except RunNotFoundError:  # deleted meanwhile
        raise RunActionError(f"No run with id {run.id!r}.") from None
    return ", ".join(label.tags), label.note, f"Saved the tags and note of {run.name}."


@dataclass
class LabelEditor:
    """The open run's tags and note, and their Save button."""

    tags: gr.Textbox
    note: gr.Textbox
    save: gr.Button
    message: gr.Markdown


def build_label_editor() -> LabelEditor:
    with gr.Accordion("Tags and note", open=True, elem_id="run-labels"):
        tags = gr.Textbox(
            label=f"Tags (comma-separated, up to {label_store.MAX_TAGS})",
            placeholder="baseline, lr-sweep",
            elem_id="run-tags",
        )
        note = gr.Textbox(
            label=f"Note (up to {label_store.MAX_NOTE_CHARS:,} characters)",
            lines=2,
            elem_id="run-note",
        )
        save = gr.Button("Save tags and note", size="sm", elem_id="run-labels-save")
        message = gr.Markdown(elem_id="run-labels-message")
    return LabelEditor(tags=tags, note=note, save=save, message=message)


def wire_label_editor(
    ctx: AppContext, editor: LabelEditor, run_select: gr.Dropdown, view: gr.State
) -> None:
    """Filled when a run is opened, saved by the button, for the viewer's own runs."""

    def load(run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None):
        return (*label_texts(ctx.db, viewer_for(request, profile), run_id), "")

    def store(
        run_id: str | None,
        tag_text: str,
        note_text: str,
        state: RunView,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        try:
            stored_tags, stored_note, done = save_label(
                ctx.db, viewer_for(request, profile), run_id, tag_text, note_text
            )
        except RunActionError as exc:
            return gr.skip(), gr.skip(), warn(escape(exc))
        state.list_key = None  # the runs table shows tags: the next tick redraws it
        return stored_tags, stored_note, ok(escape(done))

    fields = [editor.tags, editor.note, editor.message]
    run_select.change(
        load, inputs=run_select, outputs=fields, api_visibility="private", show_progress="hidden"
    )
    editor.save.click(
        store,
        inputs=[run_select, editor.tags, editor.note, view],
        outputs=fields,
        api_visibility="private",
    )
