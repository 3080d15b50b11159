"""Checks a run's model and data before the run is recorded, so mistakes surface as field errors.

More GPUs than the machine has, a tracker that is not installed, a missing model folder, a hub
id that cannot be fetched offline, 4-bit loading without a GPU, a dataset file that is missing or
lacks the mapped columns, checkpoints and a final model that will not fit the data dir's free
disk (``training.save_total_limit``, :mod:`engine.planning.disk`): each is reported as a
:class:`~engine.fields.ConfigError` naming the field (``training.num_gpus``,
``model.name_or_path``, ``data.prompt_column``...), in the form, the API and the CLI, instead of
a run that fails seconds later. Only cheap checks run here:
no weights are loaded and nothing is downloaded; with network access, a hub model id that is not
cached is looked up once (``model_info``, a few seconds at most, a network failure lets it pass).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
from pathlib import Path
from typing import Any

import torch

from engine.config.input_policy import InputPolicy
from engine.config.run_config import RunConfig
from engine.data.datasets import DatasetError, DataSpec, MissingColumnError, hub_offline, load_rows
from engine.fields import ConfigError
from engine.models.adapters import is_adapter_folder, read_base_pointer
from engine.models.loading import ModelLoadError, load_tokenizer, model_offline, resolve_spec
from engine.models.specs import ModelSpec
from engine.planning.disk import check_disk
from rewards.input_guards.hub_ids import is_hub_id

logger = logging.getLogger(__name__)

HUB_LOOKUP_TIMEOUT_S = 5.0
#: Rows of a data file the web process reads to check a run's columns; the worker reads the
#: rest (counted against ``data.max_file_rows`` while streaming), never the web process.
HEAD_ROWS = 1000


def check_inputs(
    config: RunConfig, policy: InputPolicy | None = None, data_dir: Path | None = None
) -> None:
    """Raise ``ConfigError`` when the run's GPUs, model or data cannot be used as configured,
    or (with ``data_dir``) when what it will write does not fit the data dir's free space
    (:func:`engine.planning.disk.check_disk`).

    ``policy`` limits what a run started from the web may read (no limit for the CLI).
    """
    if policy is not None:
        policy.check_model(config.model)
        policy.check_data(config.data)
        policy.check_reward(config.reward)
    check_gpus(config.training.num_gpus)
    check_gpu_ids(config.training.gpu_list)
    check_trackers(config.training.report_to, config.algorithm)
    check_model(config.model)
    if config.tools.enabled:
        check_tool_template(config)
    if config.tools.python_module:
        from engine.config.toolbox import toolbox_for  # lists the module's tools in a child

        toolbox_for(config.tools)
    if config.data.source == "hub":
        check_hub_dataset_id(str(config.data.path))
    if config.data.source == "file" or (config.data.source == "hub" and hub_offline()):
        data = config.data
        if policy is not None:  # the web process: the file's head only (split "all")
            head = min(data.max_rows or HEAD_ROWS, HEAD_ROWS)
            data = dataclasses.replace(data, split="all", max_rows=head)
        check_data(data, policy, config.tools.lookup_column)
    if data_dir is not None:
        check_disk(config, data_dir)


def check_data(
    spec: DataSpec, policy: InputPolicy | None = None, context_column: str | None = None
) -> list[dict[str, Any]]:
    """The data's rows, loaded as mapped; else ``ConfigError`` naming the ``data`` field (or
    ``tools.context_column``, a column the lookup tool reads).

    From the web (``policy`` given), at most the policy's ``max_file_rows`` rows are read, and a
    mapping error lists the file's column names only when the user uploaded the file; errors
    never quote the file's values.
    """
    if policy is not None:
        spec = policy.bounded(spec)
    try:
        return load_rows(spec, context_column)
    except MissingColumnError as exc:
        field = exc.field if "." in exc.field else f"data.{exc.field}"
        if policy is not None and not policy.is_upload(str(spec.path)):
            raise ConfigError(
                field, f"column {exc.column!r} ({exc.field}) not found in the data"
            ) from None
        raise ConfigError(field, exc.reason) from None
    except DatasetError as exc:
        raise ConfigError(f"data.{exc.field}" if exc.field else "data", exc.reason) from None


def check_hub_dataset_id(name: str) -> None:
    """A hub dataset is named by a valid id, as a hub model is (see :func:`check_model`)."""
    if not is_hub_id(name.strip(), owner_required=False):
        raise ConfigError(
            "data.path",
            f"{name!r} is not a Hugging Face dataset id (owner/name: letters, digits, '-', '_', "
            "'.'); for a file of your own use source 'file'",
        )


def check_gpus(num_gpus: int) -> None:
    """Several processes need as many CUDA GPUs: each takes its share of every step's batch."""
    available = torch.cuda.device_count()
    if num_gpus > 1 and available < num_gpus:
        raise ConfigError(
            "training.num_gpus",
            f"{num_gpus} GPUs asked for, and this machine has {available}; set it to 1"
            + (f" or up to {available}" if available > 1 else ""),
        )


def check_gpu_ids(ids: list[int]) -> None:
    """GPUs named in ``training.gpu_ids`` exist here (as nvidia-smi numbers them)."""
    if not ids:
        return
    from engine.runtime.devices import list_gpus

    here = sorted(g.index for g in list_gpus())
    missing = [i for i in ids if i not in here]
    if missing:
        have = f"GPUs {', '.join(map(str, here))}" if here else "no GPU"
        raise ConfigError(
            "training.gpu_ids",
            f"GPU {', '.join(map(str, missing))} is not on this machine, which has {have}; "
            "leave it empty to use the free ones",
        )


def check_trackers(report_to: list[str], algorithm: str = "grpo") -> None:
    """Each tracker in ``training.report_to`` is installed: TRL fails at the run's start
    otherwise (its ``TensorBoardCallback``, ``WandbCallback``... import the package). Our PPO
    loop reports to no tracker, so a PPO run asking for one is refused rather than silent."""
    if report_to and algorithm == "ppo":
        raise ConfigError(
            "training.report_to",
            "PPO runs report to Reward Studio only; the trackers take GRPO and RLOO runs "
            "(TRL's callbacks). Leave it empty for PPO",
        )
    for i, name in enumerate(report_to):
        # The trackers' import names equal their pip names (tensorboard, wandb, trackio).
        if importlib.util.find_spec(name) is None:
            raise ConfigError(
                f"training.report_to[{i}]",
                f"{name!r} is not installed; install it with `pip install {name}` and restart "
                "the app, or remove it from training.report_to",
            )


def check_model(spec: ModelSpec) -> None:
    """The model exists locally, is in the download cache, or can be downloaded now."""
    field = "model.name_or_path"
    if spec.load_in_4bit:
        check_four_bit()
    try:
        resolved = resolve_spec(spec)
    except ModelLoadError as exc:
        raise ConfigError(field, str(exc)) from None
    name = resolved.name_or_path.strip()
    path = Path(name).expanduser()
    if is_adapter_folder(path):  # a LoRA run's final model: its base must load too
        try:
            base = read_base_pointer(path)
        except ValueError as exc:
            raise ConfigError(field, str(exc)) from None
        check_model(base.spec())
        return
    if path.exists():
        if path.is_dir() and not (path / "config.json").is_file() and not resolved.gguf_file:
            raise ConfigError(
                field,
                f"folder {name!r} holds no config.json; a model folder needs config.json, the "
                "weights (*.safetensors or *.bin) and tokenizer files, as save_pretrained writes",
            )
        return
    if name.startswith((".", "/", "~")):
        raise ConfigError(field, f"no such local folder {name!r}; check the path")
    if not is_hub_id(name, owner_required=False):
        raise ConfigError(
            field,
            f"{name!r} is neither a local folder nor a Hugging Face model id (owner/name: "
            "letters, digits, '-', '_', '.')",
        )
    if _in_hub_cache(name):
        return
    if model_offline():
        raise ConfigError(
            field,
            f"{name!r} is not on this machine and network access is off (HF_HUB_OFFLINE=1). "
            "Give a local model folder, or download the model on a machine with network "
            f"access first (`huggingface-cli download {name}`).",
        )
    check_hub_model(name)


def check_four_bit() -> None:
    """4-bit (QLoRA: NF4 weights, Dettmers et al. 2023) runs through bitsandbytes' CUDA kernels:
    refused by name where there is no CUDA GPU or no bitsandbytes, before the run loads."""
    missing = []
    if not torch.cuda.is_available():
        missing.append("a CUDA GPU, and this machine has none")
    if importlib.util.find_spec("bitsandbytes") is None:
        missing.append("the bitsandbytes package (pip install bitsandbytes), not installed here")
    if missing:
        raise ConfigError(
            "model.load_in_4bit",
            f"4-bit (QLoRA) loading needs {'; and '.join(missing)}. Set model.load_in_4bit to "
            "false to train the weights in 16-bit (bf16 on a GPU, fp32 on CPU), with model.lora "
            "for a LoRA run",
        )


def check_tool_template(config: RunConfig) -> None:
    """A run with tools needs a chat template that renders tool calls: checked here for a local
    model (its tokenizer files only); a hub model is checked by the worker before training."""
    from engine.tools.template import prepare_tool_tokenizer  # imports TRL: only for tool runs

    resolved = resolve_spec(config.model)
    if not Path(resolved.name_or_path).expanduser().is_dir():
        return
    try:
        tokenizer = load_tokenizer(resolved)
    except ModelLoadError:
        return  # check_model has said what it could; the worker reports the rest
    prepare_tool_tokenizer(tokenizer, config.model.name_or_path)


def check_hub_model(repo_id: str) -> None:
    """Refuse a model id the Hub says does not exist (a typo used to fail ~55 s into the run).
    A gated model exists (its load will ask for a token); an unreachable or slow Hub is no
    reason to refuse: the run's own download reports it."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().model_info(repo_id, timeout=HUB_LOOKUP_TIMEOUT_S)
    except GatedRepoError:
        return
    except RepositoryNotFoundError:
        raise ConfigError(
            "model.name_or_path",
            f"no model {repo_id!r} on the Hugging Face Hub; check the id (owner/name). A private "
            "model needs a token with access (HF_TOKEN).",
        ) from None
    except Exception as exc:  # no network, a timeout, a Hub error: not the user's mistake
        logger.info(
            "Could not look up %s on the Hub (%s); the run's download will tell", repo_id, exc
        )


def _in_hub_cache(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
