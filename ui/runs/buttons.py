"""The Runs view's action buttons: stop, resume, delete (asked first, with an undo window),
downloads and the Hub push, each acting on the viewer's own runs only (``ui.runs.actions``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import gradio as gr

from ui.access.identity import Viewer, viewer_for
from ui.runs import actions as run_actions
from ui.runs.deletes import PendingDeletes
from ui.runs.state import RunView
from ui.shared.context import AppContext
from ui.shared.messages import escape, ok, warn

if TYPE_CHECKING:
    from ui.runs.layout import RunsParts


def wire_actions(ctx: AppContext, parts: RunsParts) -> None:
    """Stop, resume, delete, downloads and the Hub push, each for the viewer's own runs."""

    def on_click(act: Callable[[Viewer, str | None], str], button: gr.Button, stopping: bool):
        """``button`` runs ``act`` on the picked run; its message stays until the status it led
        to has moved on (a stop shows the run as "stopping…" until the worker has stopped)."""

        def handler(
            run_id: str | None,
            view: RunView,
            request: gr.Request,
            profile: gr.OAuthProfile | None = None,
        ):
            try:
                message = act(viewer_for(request, profile), run_id)
            except run_actions.RunActionError as exc:
                return warn(escape(exc))
            with view.lock:
                if stopping:
                    view.stop_asked = run_id
                view.said(run_id)
            return ok(escape(message))

        button.click(
            handler,
            inputs=[parts.run_select, parts.view],
            outputs=parts.action_md,
            api_visibility="private",
        )

    on_click(
        lambda viewer, run_id: run_actions.resume_run(
            ctx.db, ctx.launcher, viewer, run_id, ctx.address_slots
        ),
        parts.resume,
        stopping=False,
    )
    on_click(
        lambda viewer, run_id: run_actions.stop_run(ctx.db, ctx.launcher, viewer, run_id),
        parts.stop,
        stopping=True,
    )
    wire_delete(ctx, parts)

    def download_with(fn):
        def handler(
            run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None
        ):
            try:
                path = fn(ctx.db, viewer_for(request, profile), run_id)
            except run_actions.RunActionError as exc:
                return gr.File(visible=False), warn(escape(exc))
            return gr.File(value=str(path), visible=True), ""

        return handler

    for button, fn in (
        (parts.config, run_actions.config_file),
        (parts.checkpoint, run_actions.checkpoint_archive),
        (parts.data, run_actions.run_data_archive),
    ):
        button.click(
            download_with(fn),
            inputs=parts.run_select,
            outputs=[parts.download, parts.action_md],
            api_visibility="private",
        )

    def push(
        run_id: str | None,
        repo: str,
        token: str,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        viewer = viewer_for(request, profile)
        try:
            message = ok(escape(run_actions.push_to_hub(ctx.db, viewer, run_id, repo, token)))
        except run_actions.RunActionError as exc:
            message = warn(escape(exc))
        return message, ""  # the token box is cleared either way

    parts.push.click(
        push,
        inputs=[parts.run_select, parts.repo, parts.token],
        outputs=[parts.action_md, parts.token],
        api_visibility="private",
    )


def wire_delete(ctx: AppContext, parts: RunsParts) -> None:
    """Delete asks first, then waits out an undo window (``ui.runs.deletes``) before the run and
    its files are removed."""
    pending = PendingDeletes()
    hidden = gr.Row(visible=False)

    def ask(run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None):
        try:
            run = run_actions.owned_run(ctx.db, viewer_for(request, profile), run_id)
        except run_actions.RunActionError as exc:
            return warn(escape(exc)), hidden
        question = (
            f"Delete **{escape(run.name)}** (`{run.id}`) with its metrics, samples, "
            f"logs and checkpoints? You can undo it for {pending.window_s:.0f} s."
        )
        return warn(question), gr.Row(visible=True)

    def confirm(run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None):
        viewer = viewer_for(request, profile)
        try:
            run = run_actions.owned_run(ctx.db, viewer, run_id)
            run_actions.check_deletable(run)
        except run_actions.RunActionError as exc:
            return warn(escape(exc)), hidden, gr.Button(visible=False), None
        pending.schedule(
            run.id, lambda: run_actions.delete_run(ctx.db, ctx.launcher, viewer, run.id)
        )
        message = f"Deleting {run.id} in {pending.window_s:.0f} s. Undo keeps it."
        return ok(escape(message)), hidden, gr.Button(visible=True), run.id

    def undo(run_id: str | None):
        if pending.cancel(run_id):
            message = ok(escape(f"Kept {run_id}: the delete was undone."))
        else:
            message = warn("Too late to undo: the run is already deleted.")
        return message, gr.Button(visible=False), None

    parts.delete.click(
        ask,
        inputs=parts.run_select,
        outputs=[parts.action_md, parts.confirm_row],
        api_visibility="private",
    )
    parts.cancel_delete.click(
        lambda: ("", hidden), outputs=[parts.action_md, parts.confirm_row], api_visibility="private"
    )
    parts.confirm_delete.click(
        confirm,
        inputs=parts.run_select,
        outputs=[parts.action_md, parts.confirm_row, parts.undo_delete, parts.pending_delete],
        api_visibility="private",
    )
    parts.undo_delete.click(
        undo,
        inputs=parts.pending_delete,
        outputs=[parts.action_md, parts.undo_delete, parts.pending_delete],
        api_visibility="private",
    )
