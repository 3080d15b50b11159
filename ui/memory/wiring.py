"""The browser's memory wired into the page: what is saved as the user works, and restored,
checked again (:mod:`ui.memory.saved`), when the page loads.

Design, Train and chart settings are ``gr.BrowserState`` values (the browser's localStorage,
written when they change); the open tab is the label of its button, saved in localStorage by
the tab's own select event and clicked again on load (the page opens tabs by a click, never by
a server update: see ``ui.factory``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from rewards.errors import RewardSpecError
from rewards.spec import RewardSpec
from ui.access.visitor_cookie import server_secret
from ui.design.presets import show_spec
from ui.design.tab import DesignHandles
from ui.memory import saved
from ui.plots.chart_controls import ChartControls
from ui.shared.messages import escape, warn
from ui.shared.named_values import Updates, Values
from ui.train import form as train_form
from ui.train.layout import TrainParts

KEY = "reward-studio-"  # prefix of every localStorage key the page writes
TAB_KEY = KEY + "tab"
NOT_RESTORED = "The design kept in this browser was not restored"
PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}


def browser_key(data_dir: Path) -> str:
    """The key the page encrypts its stored values with (Gradio hands it to the page, so it
    hides nothing from the visitor): one per data dir, so what a browser kept outlives a
    restart of the app (Gradio's own default is a new key per start). Derived one way from the
    cookie secret, which it never reveals."""
    digest = hmac.new(server_secret(data_dir), b"browser-state", hashlib.sha256).hexdigest()
    return digest[:32]


def _or_skip(updates: Updates, anyone: gr.components.Component) -> Updates:
    """``updates``, or one skip when empty (Gradio reads an empty dict as one output value)."""
    return updates or {anyone: gr.skip()}


def wire_design_memory(demo: gr.Blocks, design: DesignHandles, secret: str | None = None) -> None:
    """The last valid reward design is kept; a reload draws it again (or says why not)."""
    out = design.editor
    assert out is not None, "the Design tab's handles carry its editor"
    store = gr.BrowserState(None, storage_key=KEY + "design", secret=secret)

    def save(spec: RewardSpec | None) -> Any:
        return gr.skip() if spec is None else spec.to_json(indent=None)

    design.spec_state.change(save, design.spec_state, store, **PRIVATE)

    # The load reads the stored text only (a load's inputs are what the page sends, anything);
    # the spec it yields is drawn by the next step, which reads the editor's own state.
    pending = gr.State(None)

    def read(text: Any) -> Updates:
        if not text:
            return {pending: None}
        try:
            return {pending: saved.saved_spec(text)}
        except RewardSpecError as exc:
            return {pending: None, out.message: warn(f"{NOT_RESTORED}: {escape(exc)}"), store: None}

    def draw(raw: Values) -> Updates:
        spec = raw[pending]
        if spec is None or spec == raw[out.spec_state]:  # nothing kept, or drawn already
            return {pending: None}
        return {
            **show_spec(
                design.form, out, spec, "Restored the design of your last visit.", NOT_RESTORED
            ),
            pending: None,
        }

    demo.load(read, inputs=store, outputs=[pending, out.message, store], **PRIVATE).then(
        draw,
        inputs={pending, out.spec_state},
        outputs=[*out.load_outputs, pending],
        **PRIVATE,
    )


def wire_train_memory(demo: gr.Blocks, parts: TrainParts, secret: str | None = None) -> None:
    """The Train form's name, algorithm, model, data (not an uploaded file: it lives on the
    server) and hyperparameters are kept; a reload puts back each value its input takes, and
    names those it dropped. The data task was once left out: a reload brought back the agent
    model, its tool and length with the arithmetic task, and Start trained on the wrong data."""
    store = gr.BrowserState(None, storage_key=KEY + "train", secret=secret)
    m = parts.model
    model_inputs = dict(zip(saved.MODEL_KEYS, m.all, strict=True))
    d = parts.data
    data_inputs = {key: getattr(d, key) for key in saved.DATA_KEYS}
    inputs = [parts.name, parts.algorithm, *m.all, *data_inputs.values(), *parts.hyper.values()]

    def save(raw: Values) -> dict[str, Any]:
        return {
            "name": raw[parts.name],
            "algorithm": raw[parts.algorithm],
            "model": {key: raw[comp] for key, comp in model_inputs.items()},
            "data": {key: raw[comp] for key, comp in data_inputs.items()},
            "hyper": {path: raw[comp] for path, comp in parts.hyper.items()},
        }

    gr.on(
        [c.change for c in inputs],
        save,
        inputs=set(inputs),
        outputs=store,
        trigger_mode="always_last",
        **PRIVATE,
    )

    def restore(value: Any) -> Updates:
        got = saved.train_values(value, parts.fields, train_form.algorithms(), parts.model_keys)
        updates = parts.show_values(got)
        if got.dropped:
            gr.Warning(
                "Not restored from your last visit (not a value these fields take): "
                + ", ".join(escape(name) for name in got.dropped[:10])
            )
        return _or_skip(updates, parts.name)

    demo.load(restore, inputs=store, outputs=inputs, **PRIVATE)


def wire_chart_memory(
    demo: gr.Blocks, controls: Sequence[tuple[str, ChartControls]], secret: str | None = None
) -> None:
    """Each tab's chart settings (smoothing, x axis, log scale) are kept and restored."""
    store = gr.BrowserState({}, storage_key=KEY + "charts", secret=secret)
    for name, c in controls:

        def save(stored: Any, smoothing: Any, x: Any, log_y: Any, name: str = name) -> dict:
            options = saved.chart_settings({"smoothing": smoothing, "x": x, "log_y": log_y})
            kept = dict(stored) if isinstance(stored, dict) else {}
            return {**kept, name: saved.chart_record(options)}

        gr.on(
            [comp.change for comp in c.all],
            save,
            inputs=[store, *c.all],
            outputs=store,
            trigger_mode="always_last",
            **PRIVATE,
        )

    def restore(stored: Any) -> Updates:
        updates: Updates = {}
        for name, c in controls:
            options = saved.chart_settings(stored.get(name) if isinstance(stored, dict) else None)
            if options is not None:
                updates.update(
                    {c.smoothing: options.smoothing, c.x_axis: options.x, c.log_y: options.log_y}
                )
        return _or_skip(updates, controls[0][1].smoothing)

    demo.load(
        restore, inputs=store, outputs=[comp for _, c in controls for comp in c.all], **PRIVATE
    )


def save_tab_js(label: str) -> str:
    """The select event's JS: the open tab's label into localStorage."""
    return f"() => {{ localStorage.setItem({TAB_KEY!r}, {label!r}); }}"


# A run the user opens goes into the address as ?run=ID, and the runs picked in Compare as
# ?compare=ID,ID (a history entry each), so a reload or a shared link opens them
# (``ui.factory``'s load reads both, for the viewer's own runs only), and back/forward open those
# of that entry: the page loads it again, as a link would. Only the user's picks are written:
# the run a page opens by default stays out of the address.
RUN_IN_URL = """const studioAsked = (key) => new URLSearchParams(location.search).get(key) || '';
window.studioUrl = { run: studioAsked('run'), compare: studioAsked('compare') };
window.studioInUrl = (key, value) => {
  if (typeof value !== 'string' || value === window.studioUrl[key]) return;
  const url = new URL(location.href);
  if (value) url.searchParams.set(key, value); else url.searchParams.delete(key);
  history.pushState({ [key]: value }, '', url);
  window.studioUrl[key] = value;
};
window.studioRunInUrl = (run) => { if (run) window.studioInUrl('run', run); };
window.studioCompareInUrl = (ids) => {
  if (Array.isArray(ids)) window.studioInUrl('compare', ids.join(','));
};
window.addEventListener('popstate', () => {
  if (Object.keys(window.studioUrl).some((k) => studioAsked(k) !== window.studioUrl[k])) {
    location.reload();
  }
});"""


def tab_head() -> str:
    """``<head>`` HTML: the tab open at the last visit, read before the page mounts (the
    page's first tab fires its select event as it mounts, which saves itself over it), and
    whether the user has clicked a tab since (a trusted click: the restore's own is not); and
    the run the user opened, in the address (:data:`RUN_IN_URL`)."""
    return (
        f"<script>window.studioLastTab = localStorage.getItem({TAB_KEY!r});"
        " document.addEventListener('click', (e) => { if (e.isTrusted"
        " && e.target.closest?.('#main-tabs [role=tab]')) window.studioTabChosen = true; },"
        f" true);\n{RUN_IN_URL}</script>"
    )


def restore_tab_script(labels: Sequence[str]) -> str:
    """JS statements for the page's load: click the tab open at the last visit (one of
    ``labels``), unless the user has picked a tab while the page loaded (on a busy server the
    load's answer can come seconds later, and must not take them back)."""
    return (
        "const label = window.studioLastTab;"
        f" if (!window.studioTabChosen && {list(labels)!r}.includes(label))"
        " [...document.querySelectorAll('#main-tabs [role=tab]')]"
        ".find((b) => b.textContent.trim() === label)?.click();"
    )
