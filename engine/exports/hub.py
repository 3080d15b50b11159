"""Publishing a run's model to the Hugging Face Hub."""

from __future__ import annotations

from pathlib import Path

from engine.runtime.checkpoints import latest_model_dir


class HubPushError(RuntimeError):
    """The push cannot be done; the message says why and what to do (never the token)."""


def push_model(run_dir: Path, repo_id: str, token: str, *, config_text: str) -> str:
    """Upload the run's final model (or newest checkpoint) and its config (``config_text``, the
    recorded config's YAML) to a Hub model repo.

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
    try:
        api.create_repo(repo_id, exist_ok=True, repo_type="model")
        api.upload_folder(folder_path=str(model_dir), repo_id=repo_id, repo_type="model")
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
    return f"https://huggingface.co/{repo_id}"
