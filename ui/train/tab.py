"""The Train tab: algorithm, model, data and hyperparameters; "Start training" launches the run.

The hyperparameter inputs are generated from ``RunConfig``'s dataclasses by
:mod:`ui.train.form`; the reward is the Design tab's spec. The equivalent config file and CLI
command are shown as the form changes and can be downloaded, so a run started here can be
repeated headless with ``python -m engine train``. A bad value is reported next to its input.
The parts are laid out in :mod:`ui.train.layout`; this module builds the config from them and
wires their events.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from engine.config.agent import AGENT_PRESET, AGENT_SETTINGS, AGENT_TASK
from engine.config.pretrained import local_gpu, pretrained_lora, pretrained_summary
from engine.config.run_config import RunConfig, documented_yaml
from engine.fields import ConfigError
from engine.models.specs import AGENT_MODEL_ALIAS, ENGLISH_MODEL_ALIAS, SHIPPED_MODELS
from engine.planning.micro_batch import describe, local_card_bytes
from rewards.spec import RewardSpec
from ui.access.identity import LOCAL_VIEWER, IdentityError, Viewer, viewer_for
from ui.design.presets import show_spec
from ui.design.tab import DesignHandles
from ui.memory import saved
from ui.preview.generate import CUSTOM, PreviewError, resolve_model
from ui.shared.context import AppContext
from ui.shared.data_inputs import data_spec
from ui.shared.downloads import DownloadTooLarge, write_download
from ui.shared.messages import escape, ok, warn
from ui.shared.named_values import Updates, Values
from ui.shared.upload_check import upload_named
from ui.train import form as train_form
from ui.train.config_file import form_record, not_in_form, read_config_file
from ui.train.form import TrainInputs
from ui.train.layout import (
    ConfigParts,
    TrainParts,
    add_error_line,
    build_config_column,
    build_train_parts,
    reward_summary,
)
from ui.train.start_message import GENERAL, not_ready_summary, start_refusal

MODEL_ALIASES = (*SHIPPED_MODELS, ENGLISH_MODEL_ALIAS)


@dataclass
class TrainHandles:
    """What the app factory wires across tabs: the id of the run just started (hidden), and
    the form (kept by the browser across a reload)."""

    run_id: gr.Textbox
    parts: TrainParts


def model_dict(
    ctx: AppContext, key: str, custom: str, lora: bool, r: Any, alpha: Any, layers: Any
) -> dict:
    """The ``ModelSpec`` dict of the model inputs (``ConfigError`` on ``model``)."""
    try:
        spec = resolve_model(ctx, key, custom or "")
    except PreviewError as exc:
        raise ConfigError("model", str(exc)) from None
    data = spec.to_dict()
    if key in MODEL_ALIASES:  # the engine resolves aliases: the config stays portable
        data.update(name_or_path=key, gguf_file=None)
    adapter = {"r": int(r or 16), "alpha": int(alpha or 32), "last_layers": int(layers or 0)}
    data["lora"] = adapter if lora else None
    return data


ESTIMATING = "Estimating the peak memory…"


def run_summary(config: RunConfig, *, estimated: bool = True) -> str:
    """One line on the size of a run, and its estimated peak memory with the knob that lowers
    the biggest term (for this machine's GPU, else for the CPU); ``estimated=False`` says the
    estimate is on its way instead (the app's start does not wait for it)."""
    t, g = config.training, config.generation
    evals = (
        f"held-out eval on {t.eval_samples} prompts"
        + (f" every {t.eval_steps} steps" if t.eval_steps else " before and after")
        if t.eval_samples
        else "no held-out eval"
    )
    memory = describe(config, local_card_bytes()) if estimated else ESTIMATING
    return (
        f"**{config.algorithm.upper()}: {t.steps} steps × {t.prompts_per_step} prompts × "
        f"{g.num_generations} generations = {config.completions_per_step} completions per "
        f"step**, up to {g.max_completion_length} new tokens each; {evals}.\n\n"
        f"<small>{escape(memory)}</small>"
    )


def collect(
    ctx: AppContext,
    parts: TrainParts,
    spec: RewardSpec | None,
    raw: Values,
    viewer: Viewer = LOCAL_VIEWER,
) -> RunConfig:
    """The run config of the form; ``raw`` is what Gradio passes for a set of inputs
    (component -> value); an uploaded file is stored among ``viewer``'s uploads. Raises
    ``ConfigError`` naming the field."""
    if spec is None:
        raise ConfigError("reward", "the reward in the Design tab has fields to fix")
    inputs = TrainInputs(
        name=raw[parts.name] or "",
        algorithm=raw[parts.algorithm],
        model=model_dict(ctx, *(raw[c] for c in parts.model.all)),
        data=data_spec(
            *(raw[c] for c in parts.data.all), policy=ctx.policy_for(viewer.owner, viewer.is_admin)
        ),
        reward=spec,
    )
    values = {path: raw[comp] for path, comp in parts.hyper.items()}
    config = train_form.build_config(inputs, list(parts.fields.values()), values)
    return ctx.demo.within_caps(config)  # every demo cap shows on its field as the form is filled


def _wire_config_view(
    ctx: AppContext,
    parts: TrainParts,
    view: ConfigParts,
    summary: gr.Markdown,
    spec: gr.State,
    tab: gr.Tab,
) -> None:
    """Rebuild the config file and the summary on every edit and when the tab opens (the
    memory estimate reads the model's shape, whose first read imports its modelling code:
    seconds the app's start need not wait); show a bad value on its field."""

    def on_change(
        raw: Values, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        try:
            config = collect(ctx, parts, raw[spec], raw, viewer_for(request, profile))
        except IdentityError:  # no visitor identity yet: the form waits for one
            return parts.show_errors(None)
        except ConfigError as exc:
            exc = upload_named(exc, raw[parts.data.file])
            return {**parts.show_errors(exc), summary: not_ready_summary(exc)}
        updates = parts.show_errors(None)
        updates[view.code] = documented_yaml(config)
        updates[summary] = run_summary(config)
        return updates

    gr.on(
        [c.change for c in parts.inputs] + [spec.change, tab.select],
        on_change,
        inputs={spec, *parts.inputs},
        outputs=[view.code, summary, *parts.errors.values()],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )

    def on_download(yaml_text: str):
        try:
            path = write_download(yaml_text, train_form.CONFIG_FILE_NAME)
        except DownloadTooLarge as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return gr.File(value=path, visible=True)

    view.download_btn.click(on_download, view.code, view.download, api_visibility="private")


def _wire_choices(parts: TrainParts, spec: gr.State) -> None:
    """The reward line follows the Design tab; the algorithm picks its section; a model change
    suggests settings for it."""
    spec.change(reward_summary, spec, parts.reward, api_visibility="private")
    algo_groups = {a: g for a, g in parts.sections.items() if a in train_form.algorithms()}

    def on_algorithm(algo: str) -> Updates:
        return {group: gr.Group(visible=a == algo) for a, group in algo_groups.items()}

    parts.algorithm.change(
        on_algorithm, parts.algorithm, list(algo_groups.values()), api_visibility="private"
    )
    on_gpu = local_gpu()  # the runs this form starts train on this machine
    fields = list(parts.fields.values())
    suggested = {path: parts.hyper[path] for path in train_form.suggested_paths(fields, on_gpu)}

    # The agent run's settings the form has inputs for (export-config --task agent's).
    agent = {path: parts.hyper[path] for path in AGENT_SETTINGS if path in parts.hyper}

    def on_choice(key: str, algo: str) -> Updates:
        pretrained = key not in SHIPPED_MODELS  # the shipped tiny models train in full
        values = train_form.suggested_values(fields, pretrained, on_gpu, algo)
        updates: Updates = {
            suggested[path]: train_form.input_value(parts.fields[path], value)
            for path, value in values.items()
        }
        updates[parts.model.custom] = gr.Textbox(visible=key == CUSTOM)
        updates[parts.model.lora] = pretrained
        layers = pretrained_lora(on_gpu)["last_layers"] if pretrained else 0
        updates[parts.model.lora_layers] = layers
        updates[parts.model.note] = (
            f"Suggested for a pretrained model {pretrained_summary(on_gpu)}, and {algo.upper()}'s "
            "own settings (the config file says where each comes from; load the preset in the "
            "Design tab). Adjust to your memory and time."
            if pretrained
            else ""
        )
        if key == AGENT_MODEL_ALIAS:  # as the Preview does: the task, tool and room it needs
            for path, comp in agent.items():
                updates[comp] = train_form.input_value(parts.fields[path], AGENT_SETTINGS[path])
            updates[parts.data.source] = "builtin"
            updates[parts.data.task] = AGENT_TASK
            updates[parts.model.note] = (
                f"Set up as the agent run (`export-config --task agent`): the {AGENT_TASK} task "
                f"and tool, {AGENT_SETTINGS['generation.max_completion_length']} new tokens. "
                f"Load the '{AGENT_PRESET}' preset in the Design tab to reward its calls."
            )
        return updates

    m = parts.model
    outputs = {m.custom, m.lora, m.lora_layers, m.note, *suggested.values(), *agent.values()}
    # On the user's pick only: a form restored after a reload keeps its own values.
    for picked in (m.key, parts.algorithm):
        picked.input(
            on_choice,
            [m.key, parts.algorithm],
            [*outputs, parts.data.source, parts.data.task],
            api_visibility="private",
        )


def _wire_start(
    ctx: AppContext,
    parts: TrainParts,
    spec: gr.State,
    start: gr.Button,
    message: gr.Markdown,
    run_id: gr.Textbox,
) -> None:
    """Start the run under the signed-in viewer; a refused config shows on its field."""

    def on_start(
        raw: Values, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        viewer = viewer_for(request, profile)  # the run's owner comes from the server side
        try:
            viewer.check_may_own_runs()
        except IdentityError as exc:
            return {message: warn(f"Not started: {escape(exc)}"), **parts.show_errors(None)}
        try:
            config = collect(ctx, parts, raw[spec], raw, viewer)
            new_id = ctx.start_run(
                config, viewer.owner, viewer.caps, admin=viewer.is_admin, address=viewer.address
            )
        except ConfigError as exc:
            exc = upload_named(exc, raw[parts.data.file])
            refusal = start_refusal(exc, parts.locate(exc), parts.fields)
            return {message: warn(refusal), **parts.show_errors(exc)}
        except Exception as exc:  # launcher refused (e.g. cannot write the data dir)
            return {message: warn(f"Not started: {escape(exc)}"), **parts.show_errors(None)}
        return {run_id: new_id, message: ok(f"Started **{new_id}**."), **parts.show_errors(None)}

    start.click(
        on_start,
        inputs={spec, *parts.inputs},
        outputs=[run_id, message, *parts.errors.values()],
        api_visibility="private",
    )


def _wire_config_file(parts: TrainParts, view: ConfigParts, design: DesignHandles) -> None:
    """A run config file fills the form, and its reward the Design tab's editor."""
    out = design.editor
    assert out is not None, "the Design tab's handles carry its editor"

    def on_load(file: Any) -> Updates:
        try:
            config = read_config_file(file)
        except ConfigError as exc:
            return {view.upload_message: warn(f"Not loaded: {escape(exc)}")}
        algorithms = train_form.algorithms()
        record = form_record(config, parts.fields, parts.model_keys)
        got = saved.train_values(record, parts.fields, algorithms, parts.model_keys)
        name = escape(Path(getattr(file, "name", file)).name)
        said = ok(f"Loaded **{name}** into the form, and its reward into the Design tab.")
        left = [*not_in_form(config), *got.dropped]
        if left:
            said += "\n\n" + warn(
                "The form has no input for: " + ", ".join(escape(x) for x in left[:10])
            )
        return {
            **parts.show_values(got),
            **show_spec(
                design.form,
                out,
                config.reward,
                "Loaded the reward of a run config.",
                "The run config's reward was not drawn",
            ),
            view.upload_message: said,
        }

    view.upload.upload(
        on_load,
        view.upload,
        [*parts.inputs, view.upload_message, *out.load_outputs],
        api_visibility="private",
    )


def build_train(ctx: AppContext, design: DesignHandles, tab: gr.Tab) -> TrainHandles:
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            parts = build_train_parts(ctx, design)
            summary = gr.Markdown(
                run_summary(RunConfig(), estimated=False), elem_id="train-summary"
            )
            start = gr.Button("Start training", variant="primary", elem_id="train-start")
            start_msg = gr.Markdown(elem_id="train-message")
            add_error_line(parts.errors, GENERAL)
        with gr.Column(scale=2):
            view = build_config_column()
            run_id = gr.Textbox(visible=False, elem_id="train-run-id")
    _wire_config_view(ctx, parts, view, summary, design.spec_state, tab)
    _wire_choices(parts, design.spec_state)
    _wire_start(ctx, parts, design.spec_state, start, start_msg, run_id)
    _wire_config_file(parts, view, design)
    return TrainHandles(run_id=run_id, parts=parts)
