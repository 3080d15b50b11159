"""What the Playground reads of a run, read once per run: its config and its data's first rows.

Every Playground request (a Generate click, a run picked, ``/generate``) needs the run's config
(its reward, its data) and the first rows of its data (the prompt picker, the system prompt).
:class:`RunReads` keeps them per run and reads them again only when the run's recorded config
changes; the newest :data:`KEEP_RUNS` runs are kept. The owner check is not cached: callers pass
a run folder they were given on this request (``ui.playground.replies.run_dir_of``).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.generation.playground import DATA_PROMPTS
from rewards.completions.text import system_text
from ui.preview.generate import load_prompts
from ui.shared.context import AppContext

#: Runs whose reads are kept.
KEEP_RUNS = 16


@dataclass(frozen=True)
class RunReads:
    """One run as the Playground reads it: its folder, its config and its data's first rows."""

    run_dir: Path
    config: RunConfig
    rows: list[dict[str, Any]]

    @property
    def system(self) -> str | None:
        """The system prompt of the run's data (its first row's), for replies to typed prompts."""
        return system_text(self.rows[0]["prompt"]) if self.rows else None


class RunReadCache:
    """:class:`RunReads` per run, keyed by run id, run folder and the recorded config (the
    run's database row). A run whose data cannot be read is not kept (its next request tries
    again)."""

    def __init__(self, keep: int = KEEP_RUNS) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._reads: OrderedDict[tuple, RunReads] = OrderedDict()

    def get(
        self, ctx: AppContext, run_id: str, run_dir: Path, recorded: Mapping[str, Any]
    ) -> RunReads:
        """The reads of run ``run_id`` in ``run_dir``, recorded with the config ``recorded``."""
        key = (run_id, str(run_dir), json.dumps(recorded, sort_keys=True))
        with self._lock:
            if key in self._reads:
                self._reads.move_to_end(key)
                return self._reads[key]
        config = RunConfig.from_dict(dict(recorded))
        rows = load_prompts(asdict(config.data), DATA_PROMPTS, ctx.input_policy)  # PreviewError
        reads = RunReads(run_dir, config, rows)
        with self._lock:
            self._reads[key] = reads
            while len(self._reads) > self._keep:
                self._reads.popitem(last=False)
        return reads
