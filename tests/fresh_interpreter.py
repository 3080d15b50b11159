"""Running an exported reward module where the project is not importable: a fresh interpreter
with only one folder on its path, no PATH and that folder as HOME."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def run_json_script(script: str, folder: Path, payload: Any) -> Any:
    """Run ``script`` (dedented) in a fresh interpreter in ``folder`` with ``payload`` as JSON
    on its stdin; what it prints, parsed as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=folder,
        env={"PATH": "", "PYTHONPATH": str(folder), "HOME": str(folder)},
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)
