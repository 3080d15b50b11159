"""The Train tab's parts, laid out: name, algorithm, model, data, the hyperparameter sections
generated from the form fields (:class:`TrainParts`), and the config file column;
:mod:`ui.train.tab` builds the config from them and wires their events."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from engine.config.run_config import documented_yaml
from engine.fields import ConfigError
from engine.models.specs import ModelSpec, available_models
from rewards.spec import RewardSpec
from ui.design.tab import DesignHandles, elem_key
from ui.memory import saved
from ui.memory.saved import TrainRestore
from ui.preview.generate import CUSTOM
from ui.shared.context import AppContext
from ui.shared.data_inputs import DataInputs, build_data_inputs
from ui.shared.messages import warn
from ui.shared.named_values import Updates, error_line, show_error_at
from ui.train import form as train_form
from ui.train.form import FormField
from ui.train.start_message import GENERAL, SECTION_TITLES


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


@dataclass
class ModelParts:
    """The model picker and its LoRA switch."""

    key: gr.Dropdown
    custom: gr.Textbox
    lora: gr.Checkbox
    lora_r: gr.Number
    lora_alpha: gr.Number
    lora_layers: gr.Number
    note: gr.Markdown

    @property
    def all(self) -> list[gr.components.Component]:
        """The inputs, in :func:`model_dict` argument order."""
        return [self.key, self.custom, self.lora, self.lora_r, self.lora_alpha, self.lora_layers]


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

    @property
    def model_keys(self) -> list[str]:
        return [value for _, value in self.model.key.choices]

    def show_values(self, got: TrainRestore) -> Updates:
        """Updates that put checked form values (a kept form, a config file) into their
        inputs; the inputs ``got`` has no value for stay as they are."""
        m, d = self.model, self.data
        model_inputs = dict(zip(saved.MODEL_KEYS, m.all, strict=True))
        updates: Updates = {self.hyper[path]: v for path, v in got.hyper.items()}
        updates.update({model_inputs[key]: v for key, v in got.model.items()})
        updates.update({getattr(d, key): v for key, v in got.data.items()})
        if got.name is not None:
            updates[self.name] = got.name
        if got.algorithm is not None:
            updates[self.algorithm] = got.algorithm
        if "key" in got.model:
            updates[m.custom] = gr.Textbox(
                value=got.model.get("custom", ""), visible=got.model["key"] == CUSTOM
            )
        return updates


def add_error_line(errors: dict[str, gr.Markdown], key: str) -> None:
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
        lora_layers = gr.Number(
            label="LoRA on the last N layers (0: all)",
            value=0,
            precision=0,
            minimum=0,
            elem_id="train-lora-layers",
        )
    note = gr.Markdown(elem_id="train-model-note")
    return ModelParts(key, custom, lora, lora_r, lora_alpha, lora_layers, note)


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
                    add_error_line(errors, f.path)


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
    add_error_line(errors, "name")
    reward = gr.Markdown(reward_summary(design.spec_state.value), elem_id="train-reward")
    add_error_line(errors, "reward")
    with gr.Accordion("Model", open=True):
        model = _build_model(training_models(ctx))
        add_error_line(errors, "model")
    with gr.Accordion("Training data", open=False):
        data = build_data_inputs("train", "train")
    add_error_line(errors, "data")  # outside the accordion, so it shows while the accordion is shut
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
    upload: gr.UploadButton
    upload_message: gr.Markdown


def build_config_column() -> ConfigParts:
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
    with gr.Row():
        download_btn = gr.Button("Download config file", size="sm")
        upload = gr.UploadButton(
            "Load a config file",
            file_types=[".yaml", ".yml", ".json"],
            size="sm",
            elem_id="train-load-config",
        )
    upload_message = gr.Markdown(elem_id="train-load-message")
    download = gr.File(label="Config", visible=False, interactive=False)
    return ConfigParts(code, download_btn, download, upload, upload_message)
