"""The app factory: builds the Gradio Blocks of Reward Studio from the tab modules.

Nothing is built at import time; :func:`build_app` is called by ``app.py`` (and by tests) with
an :class:`~ui.shared.context.AppContext`. Tabs exchange what they share through the handles their
``build_<tab>`` functions return: the reward spec (Design -> Preview, Train), the run picker
(Train -> Runs), and the Tabs container (to move the user to a new run).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import gradio as gr

from storage.paths import persistence_note
from ui.access.client_limits import ClientLimits, events_per_s
from ui.access.identity import ownership_note, viewer_for
from ui.access.own_address import public_url
from ui.access.same_origin import CrossSiteShield
from ui.access.upload_budget import (
    UploadBudget,
    budget_caps,
    stale_seconds,
    use_incoming_folder,
)
from ui.access.visitor_cookie import VisitorCookies, server_secret
from ui.api import build_api
from ui.api.arguments import StudioBlocks
from ui.api.lab import build_lab_api
from ui.compare.tab import build_compare, linked_runs
from ui.design.tab import build_design
from ui.design.try_it import PENDING_CSS
from ui.memory import wiring as memory
from ui.memory.kept_preview import wire_preview_memory
from ui.playground.tab import build_playground
from ui.plots.chart_script import chart_head
from ui.preview.tab import build_preview
from ui.runs.tab import build_runs, initial_selection
from ui.shared.context import AppContext, is_public, positive_int_setting
from ui.shared.messages import escape
from ui.shared.settings import sign_in_available
from ui.train.tab import build_train

TITLE = "Reward Studio"
CSS = (
    """
.run-chart { min-height: 280px; }
#run-samples td, #preview-table td { vertical-align: top; font-size: 0.85em; }
/* A completion drawn as HTML wraps inside its column instead of running past it. */
#run-samples td .cell-wrap { white-space: normal !important; overflow-wrap: anywhere; }
.field-error { color: #b91c1c; font-size: 0.85em; }
.msg-ok { color: #15803d; font-weight: 700; }
.msg-warn { color: #b45309; font-weight: 700; }
.msg-hint { color: #2563eb; font-weight: 700; }
.field-error p { margin: 0; }
footer { display: none !important; }
/* Column headers wrap between words, never inside one ("gr/ou/p"). */
th .header { word-break: normal !important; overflow-wrap: normal !important; }
/* Dark mode, read at WCAG's 4.5:1 (tests/ui/test_browser_dark.py): the config's YAML comments
   (the code view's comment token, grey #808080 on the dark page: 3.4:1), and disabled buttons
   (white on indigo at half opacity): grey, plainly disabled, still readable. */
.dark .cm-line .ͼ1b { color: #a3a3a3 !important; }
.dark button:disabled { opacity: 1 !important; background: #3f3f46 !important;
  color: #d4d4d8 !important; border-color: #52525b !important; }
"""
    + PENDING_CSS
)
MAX_UPLOAD_MB_ENV = "STUDIO_MAX_UPLOAD_MB"
DEFAULT_MAX_UPLOAD_MB = 100
CACHE_SWEEP = (1800, 6 * 3600)  # (every N seconds, remove files older than M seconds)
THEME = gr.themes.Soft(primary_hue="indigo", secondary_hue="amber")


def build_app(ctx: AppContext) -> gr.Blocks:
    """The whole dashboard: Design, Preview, Train, Runs, Compare and Playground tabs plus API
    endpoints."""
    # Gradio keeps every upload and served file in its cache until the server stops: sweep
    # files older than six hours every half hour, so visitors' uploads do not fill the disk.
    # A public app's visitors are told whether runs outlive a restart, not the server's paths.
    storage_note = persistence_note(ctx.data_dir, show_path=not is_public())
    with StudioBlocks(title=TITLE, delete_cache=CACHE_SWEEP) as demo:
        gr.Markdown(
            f"## {TITLE}\n"
            "Design a reward from weighted components, preview it on real generations with a "
            "trace of every component, train with GRPO, RLOO or PPO, and watch it learn."
            + (f"\n\n**{ctx.demo.describe()}**" if ctx.demo.describe() else "")
            + f"\n\n<small>{escape(storage_note)} {ownership_note()}</small>",
            elem_id="app-header",
        )
        with gr.Row():
            theme = gr.Button(
                "Dark / light", size="sm", scale=0, min_width=110, elem_id="theme-toggle"
            )
        # In the page only (ui/plots/chart_memory.js): the charts drawn change theme too.
        theme.click(None, js="() => window.studioTheme?.toggle()")
        if sign_in_available():
            # Hugging Face sign-in (the Space's README sets hf_oauth: true); signed-in users
            # own their runs as hf:<username>, visitors get a per-session identity.
            gr.LoginButton(elem_id="login-button")
        with gr.Tabs(elem_id="main-tabs"):
            with gr.Tab("Design", id="design", elem_id="tab-design") as design_tab:
                design = build_design(ctx)
            with gr.Tab("Preview", id="preview", elem_id="tab-preview") as preview_tab:
                preview = build_preview(ctx, design)
            with gr.Tab("Train", id="train", elem_id="tab-train") as train_tab:
                train = build_train(ctx, design, train_tab)
            with gr.Tab("Runs", id="runs", elem_id="tab-runs") as runs_tab:
                runs = build_runs(ctx, design.spec_state)
            with gr.Tab("Compare", id="compare", elem_id="tab-compare") as compare_tab:
                compare = build_compare(ctx, compare_tab)
            with gr.Tab("Playground", id="playground", elem_id="tab-playground") as playground:
                build_playground(ctx, design, playground)

        # The Runs view polls only while it shows.
        for tab in (design_tab, preview_tab, train_tab, runs_tab, compare_tab, playground):
            tab.select(
                _timer_switch(active=tab is runs_tab),
                outputs=runs.timer,
                show_progress="hidden",
                api_visibility="private",
            )

        # A reload keeps the work: the design, the Train form, chart settings, the open tab.
        tabs = {
            "Design": design_tab,
            "Preview": preview_tab,
            "Train": train_tab,
            "Runs": runs_tab,
            "Compare": compare_tab,
            "Playground": playground,
        }
        for label, tab in tabs.items():
            tab.select(None, js=memory.save_tab_js(label))
        key = memory.browser_key(ctx.data_dir)
        memory.wire_design_memory(demo, design, key)
        wire_preview_memory(preview_tab, preview, design.spec_state, memory.KEY, key)
        memory.wire_train_memory(demo, train.parts, key)
        charts = [("runs", runs.chart_controls), ("compare", compare.chart_controls)]
        memory.wire_chart_memory(demo, charts, key)

        # "Start training" takes the user to the new run.
        def to_new_run(run_id: str, request: gr.Request, profile: gr.OAuthProfile | None = None):
            choices, pick = initial_selection(ctx, viewer_for(request, profile), run_id)
            return gr.Dropdown(choices=choices, value=pick)

        train.run_id.change(
            to_new_run, inputs=train.run_id, outputs=runs.run_select, api_visibility="private"
        ).then(None, js=f"() => {{ {click_tab_js('Runs')} }}")

        # An anonymous visitor is known by the server's cookie (ui.access.visitor_cookie), which the
        # page never sees: nothing the page holds or a link restores names the visitor.
        def on_load(request: gr.Request, profile: gr.OAuthProfile | None = None):
            asked = request.query_params if request is not None else {}
            choices, pick = initial_selection(ctx, viewer_for(request, profile), asked.get("run"))
            compared = linked_runs(choices, asked.get("compare"))
            return (
                gr.Dropdown(choices=choices, value=pick),
                gr.Dropdown(choices=choices, value=compared),
            )

        # A link to one of the viewer's runs (the one the server picked) opens on its view.
        demo.load(
            on_load, outputs=[runs.run_select, compare.runs_box], api_visibility="private"
        ).then(
            None,
            inputs=runs.run_select,
            # Runs linked for Compare open on Compare; else the tab and theme of the last visit
            # (js-only steps chain no further).
            js="(picked) => { const params = new URLSearchParams(location.search);"
            " const asked = params.get('run'), compared = params.get('compare');"
            f" if (asked && asked === picked) {{ {click_tab_js('Runs')} }}"
            f" else if (!asked && compared) {{ {click_tab_js('Compare')} }}"
            f" else if (!asked) {{ {memory.restore_tab_script(list(tabs))} }}"
            " window.studioTheme?.restore(); }",
        )
        build_api(ctx)
        build_lab_api(ctx)
    return demo


def click_tab_js(label: str) -> str:
    """JS that opens the tab ``label`` by a click on its button, never by an update of the tabs
    from the server: an event's outputs are refreshed by the page on every later event, and
    refreshing the tabs walks the whole page."""
    return (
        "[...document.querySelectorAll('#main-tabs [role=tab]')]"
        f".find((b) => b.textContent.trim() === {label!r})?.click();"
    )


def _timer_switch(active: bool) -> Callable[[], gr.Timer]:
    return lambda: gr.Timer(active=active)


def launch_kwargs(ctx: AppContext) -> dict:
    """Arguments of ``Blocks.launch`` that every launch of the app shares.

    The data dir (the database, configs, logs, checkpoints of every user) is never served:
    it is in no allowed path, and blocked even where Gradio would otherwise serve a file
    (the working directory, the temp dir). Downloads are copies made per request for the
    run's owner (``ui.runs.actions``), which Gradio serves from its own cache. Every request
    passes :class:`~ui.access.visitor_cookie.VisitorCookies`, which issues and checks the visitor
    cookie and turns deep links off.
    """
    return {
        "theme": THEME,
        "css": CSS,
        # Charts keep their zoom and hidden series across live redraws; the last visit's tab.
        "head": chart_head() + memory.tab_head(),
        "blocked_paths": [str(ctx.data_dir)],
        # Uploads land on the server's disk (and a dataset is copied once more into uploads/).
        "max_file_size": upload_limit_bytes(),
        # Gradio's SSR proxy forwarded the client's Host (CVE-2026-134825, 6.27-6.32): off on
        # every start, whatever GRADIO_SSR_MODE says.
        "ssr_mode": False,
        # The address /config and /logout give, where the app knows it (ui.access.own_address).
        "root_path": public_url(),
        "app_kwargs": {"middleware": middleware(ctx)},
    }


def middleware(ctx: AppContext) -> list:
    """The app's ASGI middleware, outermost first: the cross-site shield, the visitor cookie
    (who asks), then the per-client limits on events and the upload budget (which need to know
    who).

    The shield is here from the server's first request; once ``launch`` returns, app.py puts
    it outside Gradio's CORS middleware too (:func:`ui.access.same_origin.shield`), so another
    site never gets a CORS answer. In the moment between the two, a probe of a credential
    route got Gradio's own 502 from the hub (the forged-Host test, once in a suite run)."""
    from gradio.utils import get_upload_folder
    from starlette.middleware import Middleware

    per_client, total = budget_caps(os.environ, is_public())
    return [
        Middleware(CrossSiteShield),
        # Gradio's /monitoring pages (events, timings) are for the operator, not visitors, and
        # its dev-mode reload stream (/gradio_api/dev/reload) for a developer's own machine.
        Middleware(
            VisitorCookies,
            secret=server_secret(ctx.data_dir),
            closed=("/monitoring", "/gradio_api/dev") if is_public() else (),
        ),
        Middleware(ClientLimits, rate=events_per_s(os.environ)),
        Middleware(
            UploadBudget,
            folder=Path(get_upload_folder()),
            per_client=per_client,
            total=total,
            window_s=CACHE_SWEEP[1],
            # Uploads stream into a folder of their own, swept of aborted ones.
            incoming=use_incoming_folder(ctx.data_dir),
            stale_s=stale_seconds(os.environ),
        ),
    ]


def upload_limit_bytes(env: Mapping[str, str] | None = None) -> int:
    """The largest file a visitor may upload: ``STUDIO_MAX_UPLOAD_MB`` (default 100) MiB."""
    env = os.environ if env is None else env
    return (positive_int_setting(env, MAX_UPLOAD_MB_ENV) or DEFAULT_MAX_UPLOAD_MB) * 2**20
