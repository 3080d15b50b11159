"""A deterministic sample of ``bench/fuzz_endpoints.py``'s cases against a started public app:
every named endpoint, hostile and plausible arguments, not one answer uncaught (``error:
null``, the generic "could not be handled", a server error). ``FUZZ_MAX_EXAMPLES=10000`` (the
campaign ``bench/reliability_report.py`` runs for RELIABILITY.md) sends the bench's 10,000."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.fuzz_endpoints import fuzz, hold_the_worker_slot

pytestmark = pytest.mark.reliability

# Ten per endpoint by default; the report's campaign sets FUZZ_MAX_EXAMPLES.
SAMPLE = int(os.environ.get("FUZZ_MAX_EXAMPLES", "120"))


def test_a_sample_of_the_fuzz_cases_leaves_nothing_uncaught(start_app, tmp_path, record_property):
    data_dir = tmp_path / "data"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(7200)"])
    try:
        hold_the_worker_slot(data_dir, sleeper.pid)  # fuzzed runs that pass every check queue
        with start_app(data_dir, {"STUDIO_PUBLIC": "1", "STUDIO_MAX_CONCURRENT_RUNS": "1"}) as app:
            result = fuzz(app.url, SAMPLE, seed=40)
    finally:
        sleeper.kill()
        sleeper.wait()
    answered = sum(sum(c.values()) for c in result["counts"].values())
    record_property("fuzz_cases", answered)
    record_property("uncaught_errors", len(result["uncaught"]))
    assert answered == SAMPLE and len(result["counts"]) >= 12, result["counts"]
    assert result["uncaught"] == [], result["uncaught"]
