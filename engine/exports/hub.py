"""Publishing a run's model to the Hugging Face Hub.

A LoRA run's model is its adapter (:mod:`engine.models.adapters`): pushed as it is, the repo is
a PEFT adapter repo (tens of MB; ``base_model.json`` and ``adapter_config.json`` name the
base); pushed ``merged``, the adapter is merged into its base first and the repo holds full
weights that load without peft, as PEFT's own ``merge_and_unload`` then ``push_to_hub`` does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from engine.models.adapters import is_adapter_folder
from engine.runtime.checkpoints import latest_model_dir
from engine.runtime.layout import POLICY_DIR


class HubPushError(RuntimeError):
    """The push cannot be done; the message says why and what to do (never the token)."""


def merged_folder(model_dir: Path, into: Path) -> Path:
    """``model_dir`` with its LoRA adapter merged into its base, saved in ``into`` (a folder
    without an adapter is returned as it is)."""
    folder = model_dir / POLICY_DIR if (model_dir / POLICY_DIR).is_dir() else model_dir
    if not is_adapter_folder(folder):
        return model_dir
    from engine.models.loading import load_model_and_tokenizer
    from engine.models.specs import ModelSpec

    model, tokenizer = load_model_and_tokenizer(ModelSpec(str(folder)), device="cpu")
    model.save_pretrained(into)
    tokenizer.save_pretrained(into)
    return into


def push_model(
    run_dir: Path, repo_id: str, token: str, *, config_text: str, merged: bool = False
) -> str:
    """Upload the run's final model (or newest checkpoint) and its config (``config_text``, the
    recorded config's YAML) to a Hub model repo; ``merged``: a LoRA adapter merged into its
    base first (:func:`merged_folder`).

    The token is used for this one call and never stored or logged. Returns the repo URL.
    """
    repo_id = (repo_id or "").strip()
    if not repo_id or "/" not in repo_id:
        raise HubPushError("Hub repo: give it as owner/name, e.g. alice/my-grpo-model.")
    if not (token or "").strip():
        raise HubPushError("Hub token: give a write token; it is used once and not stored.")
    model_dir = latest_model_dir(run_dir)
    if model_dir is None:
        raise HubPushError(f"Run {run_dir.name} has no checkpoint to push yet.")
    from huggingface_hub import HfApi

    api = HfApi(token=token.strip())
    with tempfile.TemporaryDirectory(prefix="studio-merged-") as tmp:
        folder = merged_folder(model_dir, Path(tmp)) if merged else model_dir
        _upload(api, folder, repo_id, config_text)
    return f"https://huggingface.co/{repo_id}"


def _upload(api: Any, folder: Path, repo_id: str, config_text: str) -> None:
    try:
        api.create_repo(repo_id, exist_ok=True, repo_type="model")
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="model")
        api.upload_file(
            path_or_fileobj=config_text.encode("utf-8"),
            path_in_repo="studio_config.yaml",
            repo_id=repo_id,
        )
    except Exception as exc:
        # Never echo the exception's request details: they may carry the token.
        raise HubPushError(
            f"Push to {repo_id} failed ({type(exc).__name__}); check the token's write access "
            "and the network."
        ) from None
