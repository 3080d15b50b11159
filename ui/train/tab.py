"""The Train tab: algorithm, model, data and hyperparameters; "Start training" launches the run.

The hyperparameter inputs are generated from ``RunConfig``'s dataclasses by
:mod:`ui.train.form`; the reward is the Design tab's spec. The equivalent config file and CLI
command are shown as the form changes and can be downloaded, so a run started here can be
repeated headless with ``python -m engine train``. A bad value is reported next to its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.config.fields import ConfigError
from engine.config.pretrained import local_gpu, pretrained_summary
from engine.config.run_config import RunConfig, documented_yaml
from engine.models.micro_batch import describe, local_card_bytes
from engine.models.specs import (
    ENGLISH_MODEL_ALIAS,
    SHIPPED_MODELS,
    ModelSpec,
    available_models,
)
from rewards.spec import RewardSpec
from ui.access.identity import LOCAL_VIEWER, IdentityError, Viewer, viewer_for
from ui.design.tab import DesignHandles, elem_key
from ui.preview.generate import CUSTOM, PreviewError, resolve_model
from ui.shared.context import AppContext
from ui.shared.data_inputs import DataInputs, build_data_inputs, data_spec
from ui.shared.downloads import DownloadTooLarge, write_download
from ui.shared.messages import escape, ok, warn
from ui.shared.named_values import Updates, Values, error_line, show_error_at
from ui.shared.upload_check import upload_named
from ui.train import form as train_form
from ui.train.form import FormField, TrainInputs
from ui.train.start_message import GENERAL, SECTION_TITLES, not_ready_summary, start_refusal

MODEL_ALIASES = (*SHIPPED_MODELS, ENGLISH_MODEL_ALIAS)


@dataclass
class TrainHandles:
    """What the app factory wires across tabs: the id of the run just started (hidden), and
    the form (kept by the browser across a reload)."""

    run_id: gr.Textbox
    parts: TrainParts


def _field_input(field: FormField) -> gr.components.Component:
    common = {
        "label": field.label,
        "info": field.help + (" Leave empty for none." if field.optional else ""),
        "elem_id": f"train-{elem_key(field.path)}",
    }
    if field.kind == "bool":
        return gr.Checkbox(value=bool(field.default), **common)
    if field.kind in ("int", "float") and field.optional:
        # A Number input cannot be empty; empty text means "none" here.
        return gr.Textbox(value="" if field.default is None else str(field.default), **common)
    if field.kind in ("int", "float"):
        return gr.Number(
            value=field.default, precision=0 if field.kind == "int" else None, **common
        )
    if field.kind == "choice":
        return gr.Dropdown(choices=list(field.choices), value=field.default, **common)
    if field.kind == "multi":
        return gr.CheckboxGroup(choices=list(field.choices), value=list(field.default), **common)
    return gr.Textbox(value="" if field.default is None else str(field.default), **common)


def model_dict(ctx: AppContext, key: str, custom: str, lora: bool, r: Any, alpha: Any) -> dict:
    """The ``ModelSpec`` dict of the model inputs (``ConfigError`` on ``model``)."""
    try:
        spec = resolve_model(ctx, key, custom or "")
    except PreviewError as exc:
        raise ConfigError("model", str(exc)) from None
    data = spec.to_dict()
    if key in MODEL_ALIASES:  # the engine resolves aliases: the config stays portable
        data.update(name_or_path=key, gguf_file=None)
    data["lora"] = {"r": int(r or 16), "alpha": int(alpha or 32)} if lora else None
    return data


def training_models(ctx: AppContext) -> list[tuple[str, str]]:
    """``(label, key)`` of the models a run may train: under a demo size cap, those that fit
    (any other id is checked against the cap when the run starts)."""
    options = [(m.label, m.key) for m in available_models() if m.available and _fits(ctx, m.spec)]
    return [*options, ("Any Hugging Face id or local folder…", CUSTOM)]


def _fits(ctx: AppContext, spec: ModelSpec) -> bool:
    try:
        ctx.check_model_size(spec)
    except ConfigError:
        return False
    return True


def reward_summary(spec: RewardSpec | None) -> str:
    if spec is None:
        return warn("**Reward**: the Design tab has fields to fix.")
    parts = [f"{name} × {c.weight:g}" for name, c in spec.enabled_components()]
    return "**Reward** (from the Design tab): " + " + ".join(parts)


def run_summary(config: RunConfig) -> str:
    """One line on the size of a run, and its estimated peak memory with the knob that lowers
    the biggest term (for this machine's GPU, else for the CPU)."""
    t, g = config.training, config.generation
    evals = (
        f"held-out eval on {t.eval_samples} prompts"
        + (f" every {t.eval_steps} steps" if t.eval_steps else " before and after")
        if t.eval_samples
        else "no held-out eval"
    )
    return (
        f"**{config.algorithm.upper()}: {t.steps} steps × {t.prompts_per_step} prompts × "
        f"{g.num_generations} generations = {config.completions_per_step} completions per "
        f"step**, up to {g.max_completion_length} new tokens each; {evals}.\n\n"
        f"<small>{escape(describe(config, local_card_bytes()))}</small>"
    )


@dataclass
class ModelParts:
    """The model picker and its LoRA switch."""

    key: gr.Dropdown
    custom: gr.Textbox
    lora: gr.Checkbox
    lora_r: gr.Number
    lora_alpha: gr.Number
    note: gr.Markdown

    @property
    def all(self) -> list[gr.components.Component]:
        """The inputs, in :func:`model_dict` argument order."""
        return [self.key, self.custom, self.lora, self.lora_r, self.lora_alpha]


@dataclass
class TrainParts:
    """The Train form's named parts: hyperparameter inputs keyed by dotted field path
    (``"training.steps"``) and error lines keyed by the config field they are about."""

    name: gr.Textbox
    algorithm: gr.Radio
    reward: gr.Markdown
    model: ModelParts
    data: DataInputs
    hyper: dict[str, gr.components.Component]
    fields: dict[str, FormField]  # the field behind each hyperparameter input
    sections: dict[str, gr.Group]
    errors: dict[str, gr.Markdown]

    @property
    def inputs(self) -> list[gr.components.Component]:
        """Every input the config is built from."""
        return [self.name, self.algorithm, *self.model.all, *self.data.all, *self.hyper.values()]

    def locate(self, exc: ConfigError) -> str:
        """The error line of ``exc``'s field, or of the nearest section that has one."""
        field = exc.field or GENERAL
        while field and field not in self.errors:
            field = field.rsplit(".", 1)[0] if "." in field else GENERAL
        return field

    def show_errors(self, exc: ConfigError | None) -> Updates:
        """Updates that show ``exc`` on its field and hide every other error line."""
        return show_error_at(self.errors, None if exc is None else self.locate(exc), exc)


def _error_md(errors: dict[str, gr.Markdown], key: str) -> None:
    errors[key] = error_line(f"train-error-{elem_key(key)}")


def _build_model(models: list[tuple[str, str]]) -> ModelParts:
    with gr.Row():
        key = gr.Dropdown(label="Model", choices=models, value=models[0][1], elem_id="train-model")
        custom = gr.Textbox(
            label="Hugging Face id or local folder", visible=False, elem_id="train-custom-model"
        )
    with gr.Row():
        lora = gr.Checkbox(
            label="LoRA adapter (train few parameters)", value=False, elem_id="train-lora"
        )
        lora_r = gr.Number(label="LoRA rank r", value=16, precision=0)
        lora_alpha = gr.Number(label="LoRA alpha", value=32, precision=0)
    note = gr.Markdown(elem_id="train-model-note")
    return ModelParts(key, custom, lora, lora_r, lora_alpha, note)


def _build_fields(
    fields: list[FormField],
    hyper: dict[str, gr.components.Component],
    errors: dict[str, gr.Markdown],
) -> None:
    """Inputs for ``fields``, three to a row, each with its error line, keyed by field path."""
    for start in range(0, len(fields), 3):
        with gr.Row():
            for f in fields[start : start + 3]:
                with gr.Column(min_width=220):
                    hyper[f.path] = _field_input(f)
                    _error_md(errors, f.path)


def _build_sections(
    fields: list[FormField],
    algos: list[str],
    hyper: dict[str, gr.components.Component],
    errors: dict[str, gr.Markdown],
) -> dict[str, gr.Group]:
    """One group per config section: key fields up front, the rest under "Advanced"; of the
    algorithm sections only the chosen one is visible."""
    groups = {}
    for section in (*train_form.HYPER_SECTIONS, *algos):
        in_section = [f for f in fields if f.section == section]
        rest = [f for f in in_section if not f.key]
        visible = section in train_form.HYPER_SECTIONS or section == algos[0]
        with gr.Group(visible=visible) as groups[section]:
            gr.Markdown(f"#### {SECTION_TITLES.get(section, section)}")
            _build_fields([f for f in in_section if f.key], hyper, errors)
            if rest:
                with gr.Accordion("Advanced", open=False):
                    _build_fields(rest, hyper, errors)
    return groups


def build_train_parts(ctx: AppContext, design: DesignHandles) -> TrainParts:
    """Name, algorithm, reward line, model, data and the hyperparameter sections."""
    algos = train_form.algorithms()
    fields = train_form.form_fields()
    errors: dict[str, gr.Markdown] = {}
    hyper: dict[str, gr.components.Component] = {}
    with gr.Row():
        name = gr.Textbox(label="Run name", placeholder="optional", elem_id="train-name")
        algorithm = gr.Radio(
            [(a.upper(), a) for a in algos],
            value=algos[0],
            label="Algorithm",
            elem_id="train-algorithm",
        )
    _error_md(errors, "name")
    reward = gr.Markdown(reward_summary(design.spec_state.value), elem_id="train-reward")
    _error_md(errors, "reward")
    with gr.Accordion("Model", open=True):
        model = _build_model(training_models(ctx))
        _error_md(errors, "model")
    with gr.Accordion("Training data", open=False):
        data = build_data_inputs("train", "train")
    _error_md(errors, "data")  # outside the accordion, so it shows while the accordion is shut
    sections = _build_sections(fields, algos, hyper, errors)
    by_path = {f.path: f for f in fields}
    return TrainParts(
        name=name,
        algorithm=algorithm,
        reward=reward,
        model=model,
        data=data,
        hyper=hyper,
        fields={path: by_path[path] for path in hyper},
        sections=sections,
        errors=errors,
    )


@dataclass
class ConfigParts:
    """The config file view, its download and the CLI command."""

    code: gr.Code
    download_btn: gr.Button
    download: gr.File


def _build_config_column() -> ConfigParts:
    gr.Markdown(
        "### Same run from the command line\nSave the config below and run it "
        "headless; CLI runs show up in the Runs tab too."
    )
    gr.Code(value=train_form.cli_command(), language="shell", label="Command", elem_id="train-cli")
    code = gr.Code(
        value=documented_yaml(),
        language="yaml",
        label="Config file",
        elem_id="train-yaml",
        max_lines=45,
    )
    download_btn = gr.Button("Download config file", size="sm")
    download = gr.File(label="Config", visible=False, interactive=False)
    return ConfigParts(code, download_btn, download)


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


def _input_value(field: FormField, value: Any) -> Any:
    """A config value as its input shows it (optional numbers are text; empty means none)."""
    if field.optional and field.kind in ("int", "float"):
        return "" if value is None else str(value)
    return value


def _wire_config_view(
    ctx: AppContext, parts: TrainParts, view: ConfigParts, summary: gr.Markdown, spec: gr.State
) -> None:
    """Rebuild the config file and the summary on every edit; show a bad value on its field."""

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
        [c.change for c in parts.inputs] + [spec.change],
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
    suggested = {
        path: parts.hyper[path]
        for path in train_form.suggested_values(list(parts.fields.values()), True, on_gpu)
    }

    def on_model(key: str) -> Updates:
        pretrained = key not in SHIPPED_MODELS  # the shipped tiny models train in full
        values = train_form.suggested_values(list(parts.fields.values()), pretrained, on_gpu)
        updates: Updates = {
            comp: _input_value(parts.fields[path], values[path]) for path, comp in suggested.items()
        }
        updates[parts.model.custom] = gr.Textbox(visible=key == CUSTOM)
        updates[parts.model.lora] = pretrained
        updates[parts.model.note] = (
            f"Suggested for a pretrained model {pretrained_summary(on_gpu)} (load the preset in "
            "the Design tab). Adjust to your memory and time."
            if pretrained
            else ""
        )
        return updates

    m = parts.model
    # On the user's pick only: a form restored after a reload keeps its own values.
    m.key.input(
        on_model,
        m.key,
        [m.custom, m.lora, m.note, *suggested.values()],
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
            new_id = ctx.start_run(config, viewer.owner, viewer.caps, admin=viewer.is_admin)
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


def build_train(ctx: AppContext, design: DesignHandles) -> TrainHandles:
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            parts = build_train_parts(ctx, design)
            summary = gr.Markdown(run_summary(RunConfig()), elem_id="train-summary")
            start = gr.Button("Start training", variant="primary", elem_id="train-start")
            start_msg = gr.Markdown(elem_id="train-message")
            _error_md(parts.errors, GENERAL)
        with gr.Column(scale=2):
            view = _build_config_column()
            run_id = gr.Textbox(visible=False, elem_id="train-run-id")
    _wire_config_view(ctx, parts, view, summary, design.spec_state)
    _wire_choices(parts, design.spec_state)
    _wire_start(ctx, parts, design.spec_state, start, start_msg, run_id)
    return TrainHandles(run_id=run_id, parts=parts)
