"""The trackers a TRL run reports to besides Reward Studio (``training.report_to``).

transformers' ``TrackioCallback`` calls ``trackio.init(project=args.project, space_id=
args.trackio_space_id, ...)``; with no Space id trackio logs to a local SQLite database under
``TRACKIO_DIR``, an environment variable trackio reads once, when it is imported. So the worker
calls :func:`point_trackers_at` before it imports TRL, which points that folder at the run's own
``trackio/`` folder, and :func:`tracker_args` gives the arguments that keep trackio off the Hub:
no Space, no static Space. ``TRACKIO_DIR=<run folder>/trackio trackio show --project
reward-studio`` opens the logs in trackio's own dashboard.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.runtime.layout import trackio_dir

TRACKIO_PROJECT = "reward-studio"
# Environment variables that would send trackio's logs to a Space or a server instead.
TRACKIO_REMOTE_ENV = ("TRACKIO_SPACE_ID", "TRACKIO_SERVER_URL", "TRACKIO_BUCKET_ID")


def point_trackers_at(config: RunConfig, folder: str | os.PathLike[str]) -> None:
    """Send trackio's logs of a run in ``folder`` to its ``trackio/`` folder, never a Space or a
    server. Call it before TRL is imported (importing ``GRPOTrainer`` imports trackio)."""
    if "trackio" not in config.training.report_to:
        return
    os.environ["TRACKIO_DIR"] = str(trackio_dir(Path(folder)))
    for name in TRACKIO_REMOTE_ENV:
        os.environ.pop(name, None)


def tracker_args(config: RunConfig, folder: str | os.PathLike[str]) -> dict[str, Any]:
    """TrainingArguments for the trackers in ``config.training.report_to`` of a run in
    ``folder`` (``{}`` without trackio).

    Raises:
        RuntimeError: trackio resolved another folder (it was imported before
            :func:`point_trackers_at`): its logs would not go into the run folder.
    """
    if "trackio" not in config.training.report_to:
        return {}
    import trackio.utils  # reads TRACKIO_DIR once (a module constant: pinned in requirements)

    where = trackio_dir(Path(folder))
    resolved = Path(trackio.utils.TRACKIO_DIR)
    if resolved != where:
        raise RuntimeError(
            f"trackio logs to {resolved}, not the run's {where}: it was imported before "
            "engine.tracking.trackers.point_trackers_at"
        )
    return {
        "project": TRACKIO_PROJECT,
        "run_name": config.name or None,
        "trackio_space_id": None,
        "trackio_static_space_id": False,
    }
