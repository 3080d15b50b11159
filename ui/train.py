"""The Train tab: algorithm, model, data and hyperparameters; "Start training" launches the run.

The hyperparameter inputs are generated from ``RunConfig``'s dataclasses by
:mod:`ui.train_form`; the reward is the Design tab's spec. The equivalent config file and CLI
command are shown as the form changes and can be downloaded, so a run started here can be
repeated headless with ``python -m engine train``. A bad value is reported next to its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.config import RunConfig, documented_yaml, pretrained_summary
from engine.dataclass_io import ConfigError
from engine.models import DEFAULT_MODEL_ALIAS, ENGLISH_MODEL_ALIAS, ModelSpec, available_models
from rewards.spec import RewardSpec
from ui import spec_io, train_form
from ui.context import AppContext
from ui.data_inputs import build_data_inputs, data_spec
from ui.design import DesignHandles, elem_key
from ui.messages import escape, ok, warn
from ui.preview_run import CUSTOM, PreviewError, resolve_model
from ui.train_form import FormField, TrainInputs

GENERAL = ""
MODEL_ALIASES = (DEFAULT_MODEL_ALIAS, ENGLISH_MODEL_ALIAS)
SECTION_TITLES = {
    "generation": "Generation",
    "training": "Training",
    "grpo": "GRPO",
    "rloo": "RLOO",
    "ppo": "PPO",
}


@dataclass
class TrainHandles:
    """What the app factory wires across tabs: the id of the run just started (hidden)."""

    run_id: gr.Textbox


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


def reward_summary(spec_dict: dict | None) -> str:
    if spec_dict is None:
        return warn("**Reward**: the Design tab has fields to fix.")
    spec = RewardSpec.from_dict(spec_dict)
    parts = [f"{name} × {c.weight:g}" for name, c in spec.enabled_components()]
    return "**Reward** (from the Design tab): " + " + ".join(parts)


def run_summary(config: RunConfig) -> str:
    """One line on the size of a run, and the memory hint users need most."""
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
        f"step**, up to {g.max_completion_length} new tokens each; {evals}. "
        "<small>Memory grows with generations × max completion length: lower micro batch "
        "size (Advanced) if it runs out.</small>"
    )


def build_train(ctx: AppContext, design: DesignHandles) -> TrainHandles:
    fields = train_form.form_fields()
    algos = train_form.algorithms()
    inputs: list[gr.components.Component] = []
    input_fields: list[FormField] = []  # the field of each input, in input order
    errors: dict[str, gr.Markdown] = {}
    sections: dict[str, list[gr.Group]] = {}

    def error_md(key: str) -> None:
        errors[key] = gr.Markdown(
            "", visible=False, elem_classes="field-error", elem_id=f"train-error-{elem_key(key)}"
        )

    def field_block(group_fields: list[FormField]) -> None:
        for start in range(0, len(group_fields), 3):
            with gr.Row():
                for f in group_fields[start : start + 3]:
                    with gr.Column(min_width=220):
                        inputs.append(_field_input(f))
                        input_fields.append(f)
                        error_md(f.path)

    model_options = training_models(ctx)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            with gr.Row():
                name = gr.Textbox(label="Run name", placeholder="optional", elem_id="train-name")
                algorithm = gr.Radio(
                    [(a.upper(), a) for a in algos],
                    value=algos[0],
                    label="Algorithm",
                    elem_id="train-algorithm",
                )
            error_md("name")
            reward_md = gr.Markdown(reward_summary(design.spec_state.value), elem_id="train-reward")
            error_md("reward")
            with gr.Accordion("Model", open=True):
                with gr.Row():
                    model_key = gr.Dropdown(
                        label="Model",
                        choices=model_options,
                        value=model_options[0][1],
                        elem_id="train-model",
                    )
                    custom_model = gr.Textbox(
                        label="Hugging Face id or local folder",
                        visible=False,
                        elem_id="train-custom-model",
                    )
                with gr.Row():
                    lora = gr.Checkbox(
                        label="LoRA adapter (train few parameters)",
                        value=False,
                        elem_id="train-lora",
                    )
                    lora_r = gr.Number(label="LoRA rank r", value=16, precision=0)
                    lora_alpha = gr.Number(label="LoRA alpha", value=32, precision=0)
                model_note = gr.Markdown(elem_id="train-model-note")
                error_md("model")
            with gr.Accordion("Training data", open=False):
                data = build_data_inputs("train", "train")
            error_md("data")  # outside the accordion, so it shows while the accordion is shut
            for section in (*train_form.HYPER_SECTIONS, *algos):
                section_fields = [f for f in fields if f.section == section]
                key_fields = [f for f in section_fields if f.key]
                rest = [f for f in section_fields if not f.key]
                visible = section in train_form.HYPER_SECTIONS or section == algos[0]
                with gr.Group(visible=visible) as group:
                    gr.Markdown(f"#### {SECTION_TITLES.get(section, section)}")
                    field_block(key_fields)
                    if rest:
                        with gr.Accordion("Advanced", open=False):
                            field_block(rest)
                sections.setdefault(section, []).append(group)
            summary = gr.Markdown(run_summary(RunConfig()), elem_id="train-summary")
            start = gr.Button("Start training", variant="primary", elem_id="train-start")
            start_msg = gr.Markdown(elem_id="train-message")
            error_md(GENERAL)
        with gr.Column(scale=2):
            gr.Markdown(
                "### Same run from the command line\nSave the config below and run it "
                "headless; CLI runs show up in the Runs tab too."
            )
            gr.Code(
                value=train_form.cli_command(),
                language="shell",
                label="Command",
                elem_id="train-cli",
            )
            config_code = gr.Code(
                value=documented_yaml(),
                language="yaml",
                label="Config file",
                elem_id="train-yaml",
                max_lines=45,
            )
            download_btn = gr.Button("Download config file", size="sm")
            download = gr.File(label="Config", visible=False, interactive=False)
            run_id = gr.Textbox(visible=False, elem_id="train-run-id")

    error_keys = list(errors)
    form_inputs = [name, algorithm, model_key, custom_model, lora, lora_r, lora_alpha, *data.all]

    def collect(spec_dict: dict | None, values: tuple) -> RunConfig:
        if spec_dict is None:
            raise ConfigError("reward", "the reward in the Design tab has fields to fix")
        (nm, algo, key, custom, use_lora, r, alpha, *rest) = values
        data_values, hyper = rest[: len(data.all)], rest[len(data.all) :]
        inputs_ = TrainInputs(
            name=nm or "",
            algorithm=algo,
            model=model_dict(ctx, key, custom, use_lora, r, alpha),
            data=data_spec(*data_values, policy=ctx.input_policy),
            reward=spec_dict,
        )
        return train_form.build_config(inputs_, input_fields, hyper, max_steps=ctx.demo.max_steps)

    def locate(exc: ConfigError) -> str:
        field = exc.field or GENERAL
        while field and field not in errors:
            field = field.rsplit(".", 1)[0] if "." in field else GENERAL
        return field

    def show_errors(exc: ConfigError | None):
        where = None if exc is None else locate(exc)
        return [
            gr.Markdown(value=warn(escape(exc)), visible=True)
            if k == where
            else gr.Markdown(visible=False)
            for k in error_keys
        ]

    def on_change(spec_dict: dict, *values):
        try:
            config = collect(spec_dict, values)
        except ConfigError as exc:
            return (gr.skip(), gr.skip(), *show_errors(exc))
        return (documented_yaml(config), run_summary(config), *show_errors(None))

    all_inputs = [*form_inputs, *inputs]
    gr.on(
        [c.change for c in all_inputs] + [design.spec_state.change],
        on_change,
        inputs=[design.spec_state, *all_inputs],
        outputs=[config_code, summary, *[errors[k] for k in error_keys]],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )
    design.spec_state.change(reward_summary, design.spec_state, reward_md, api_visibility="private")

    def on_algorithm(algo: str):
        return [gr.Group(visible=section == algo) for section in algos for _ in sections[section]]

    algorithm.change(
        on_algorithm,
        algorithm,
        [g for section in algos for g in sections[section]],
        api_visibility="private",
    )
    suggested_paths = list(train_form.suggested_values(input_fields, True))
    suggested_inputs = [
        inputs[input_fields.index(f)] for f in input_fields if f.path in suggested_paths
    ]
    suggested_order = [f for f in input_fields if f.path in suggested_paths]

    def on_model(key: str):
        pretrained = key != DEFAULT_MODEL_ALIAS
        values = train_form.suggested_values(input_fields, pretrained)
        updates = []
        for f in suggested_order:
            value = values[f.path]
            text = f.optional and f.kind in ("int", "float")
            updates.append("" if text and value is None else (str(value) if text else value))
        note = (
            f"Suggested for a pretrained model: {pretrained_summary()}. Adjust to your memory "
            "and time."
            if pretrained
            else ""
        )
        return (gr.Textbox(visible=key == CUSTOM), pretrained, note, *updates)

    model_key.change(
        on_model,
        model_key,
        [custom_model, lora, model_note, *suggested_inputs],
        api_visibility="private",
    )

    def on_start(spec_dict: dict, *values):
        try:
            config = collect(spec_dict, values)
            new_id = ctx.start_run(config)
        except ConfigError as exc:
            return (gr.skip(), warn("Not started: fix the field marked below."), *show_errors(exc))
        except Exception as exc:  # launcher refused (e.g. cannot write the data dir)
            return (gr.skip(), warn(f"Not started: {escape(exc)}"), *show_errors(None))
        return (new_id, ok(f"Started **{new_id}**."), *show_errors(None))

    start.click(
        on_start,
        inputs=[design.spec_state, *all_inputs],
        outputs=[run_id, start_msg, *[errors[k] for k in error_keys]],
        api_visibility="private",
    )

    def on_download(yaml_text: str):
        path = spec_io.write_download(yaml_text, train_form.CONFIG_FILE_NAME)
        return gr.File(value=path, visible=True)

    download_btn.click(on_download, config_code, download, api_visibility="private")
    return TrainHandles(run_id=run_id)
