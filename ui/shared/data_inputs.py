"""The data picker shared by the Preview and Train tabs: built-in task, uploaded file, hub id.

The inputs map one-to-one onto ``engine.data.datasets.DataSpec`` fields (source, path, split,
config_name, prompt/answer/system columns, the built-in task); :func:`data_spec` builds its dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.config.input_policy import InputPolicy
from engine.data.datasets import BUILTIN_SPLITS, BUILTIN_TASKS, SOURCES
from engine.data.files import FILE_TYPES
from ui.shared.upload_check import check_upload

SOURCE_LABELS = {
    "builtin": "built-in task",
    "file": "uploaded file (JSONL, CSV, Parquet)",
    "hub": "Hugging Face dataset id (needs network)",
}
TASK_LABELS = {
    "arithmetic": "arithmetic word problems",
    "calculator": "multi-digit products (agent task: give the model the calculator)",
}


def data_spec(
    source: str,
    split: str,
    file: Any,
    hub_id: str,
    hub_config: str,
    prompt_col: str,
    answer_col: str,
    system_col: str,
    task: str = "arithmetic",
    *,
    policy: InputPolicy | None = None,
) -> dict[str, Any]:
    """The ``DataSpec`` dict of the data inputs (blank optional inputs become ``None``).

    With ``policy`` (the web app's), an uploaded file is first stored in the data dir's uploads
    folder and the spec names it there (Gradio's own copy is temporary).
    """
    split = (split or "").strip()
    if source == "builtin":
        return {"source": "builtin", "task": task or "arithmetic", "split": split or "train"}
    columns = {
        "prompt_column": (prompt_col or "").strip() or "prompt",
        "answer_column": (answer_col or "").strip() or "answer",
        "system_column": (system_col or "").strip() or None,
    }
    if source == "file":
        path = getattr(file, "name", file)
        if policy is not None and path:
            path = str(policy.store_upload(path))
        return {"source": "file", "path": path, **columns}
    return {
        "source": "hub",
        "path": (hub_id or "").strip(),
        "config_name": (hub_config or "").strip() or None,
        "split": split or "train",
        **columns,
    }


@dataclass
class DataInputs:
    """The data picker's components, in :func:`data_spec` argument order via :attr:`all`."""

    source: gr.Radio
    split: gr.Textbox
    file: gr.File
    hub_id: gr.Textbox
    hub_config: gr.Textbox
    prompt_col: gr.Textbox
    answer_col: gr.Textbox
    system_col: gr.Textbox
    task: gr.Radio

    @property
    def all(self) -> list[gr.components.Component]:
        return [
            self.source,
            self.split,
            self.file,
            self.hub_id,
            self.hub_config,
            self.prompt_col,
            self.answer_col,
            self.system_col,
            self.task,
        ]


def build_data_inputs(default_split: str, prefix: str) -> DataInputs:
    """The data picker; ``prefix`` keeps DOM ids unique per tab."""
    source = gr.Radio(
        [(SOURCE_LABELS.get(s, s), s) for s in SOURCES],
        value="builtin",
        label="Source",
        elem_id=f"{prefix}-data-source",
    )
    task = gr.Radio(
        [(TASK_LABELS.get(t, t), t) for t in BUILTIN_TASKS],
        value="arithmetic",
        label="Built-in task",
        elem_id=f"{prefix}-data-task",
    )
    split = gr.Textbox(
        label="Split",
        value=default_split,
        info=f"built-in task: {' or '.join(BUILTIN_SPLITS)}; hub: the split name",
    )
    with gr.Group(visible=False) as file_group:
        file = gr.File(
            label="Prompt file", file_types=list(FILE_TYPES), elem_id=f"{prefix}-data-file"
        )
        file_check = gr.Markdown(elem_id=f"{prefix}-data-file-check")
    # Checked as it arrives, naming the file as uploaded; a new upload or a removal replaces
    # the previous file's line.
    file.change(check_upload, file, file_check, api_visibility="private", show_progress="hidden")
    with gr.Group(visible=False) as hub_group:
        hub_id = gr.Textbox(label="Dataset id", placeholder="openai/gsm8k")
        hub_config = gr.Textbox(label="Config", placeholder="main")
    with gr.Group(visible=False) as mapping_group:
        gr.Markdown("Column mapping")
        prompt_col = gr.Textbox(label="Prompt column", value="prompt")
        answer_col = gr.Textbox(label="Answer column", value="answer")
        system_col = gr.Textbox(label="System prompt column (optional)", value="")

    def on_source(src: str):
        return (
            gr.Group(visible=src == "file"),
            gr.Group(visible=src == "hub"),
            gr.Group(visible=src != "builtin"),
            gr.Textbox(value=default_split if src == "builtin" else "train"),
            gr.Radio(visible=src == "builtin"),
        )

    source.change(
        on_source,
        source,
        [file_group, hub_group, mapping_group, split, task],
        api_visibility="private",
    )
    return DataInputs(
        source, split, file, hub_id, hub_config, prompt_col, answer_col, system_col, task
    )
