"""Re-score a recorded run's stored samples with another spec (the reward lab, issue 23).

The one place that reads a run's samples for :func:`rewards.lab.rescore.rescore`: the owner
check (``owner`` given: another user's run reads like a missing one) and the bound on how many
samples one call re-scores are here, so the CLI and the API share them.
"""

from __future__ import annotations

from rewards.lab.rescore import Rescore, rescore
from rewards.spec import RewardSpec
from storage import runs as run_store
from storage.records.samples import sample_steps, samples_at
from storage.sqlite.db import Database

#: Most stored samples one re-score reads (a long run logs 16 a step for a few thousand steps).
MAX_RESCORE_SAMPLES = 20_000


class RescoreError(ValueError):
    """A re-score that cannot be done; the message names the argument."""


def rescore_run(
    db: Database,
    run_id: str,
    spec: RewardSpec,
    *,
    owner: str | None = None,
    max_samples: int = MAX_RESCORE_SAMPLES,
) -> Rescore:
    """Every logged step of run ``run_id`` (of ``owner``, when given) re-scored with ``spec``.

    Reads the newest steps first when the run stores more than ``max_samples`` samples, so the
    steps re-scored are the latest ones (the model as it ended up), and says so by the steps.
    """
    if not isinstance(run_id, str) or run_store.get_run(db, run_id, owner=owner) is None:
        raise RescoreError(f"run_id: no run with id {run_id!r}")
    by_step = []
    count = 0
    for step in reversed(sample_steps(db, run_id)):
        rows = samples_at(db, run_id, step)
        if count + len(rows) > max_samples:
            break
        by_step.append((step, rows))
        count += len(rows)
    if not by_step:
        raise RescoreError(f"run_id: run {run_id!r} has no stored samples to re-score")
    try:
        return rescore(spec, by_step[::-1])
    except ValueError as exc:
        raise RescoreError(str(exc)) from None
