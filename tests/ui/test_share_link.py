"""``python app.py --share`` makes a public gradio.live link: the app must then treat itself as
public (no user code for anonymous visitors, per-browser identities, demo caps), as on a Space.

Without internet the tunnel is refused and the app goes on serving locally, which is enough to
probe what a visitor of the link would reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest
from gradio_client import Client

from tests.ui.conftest import ROOT, LiveApp, _wait_up, free_port

pytestmark = pytest.mark.reliability

CODE_SPEC = {
    "components": [
        {"name": "python", "params": {"code": "def reward(completions, **kw):\n    return [1.0]"}}
    ]
}


def test_a_share_link_runs_no_user_code_for_anonymous_visitors(tmp_path, record_property):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SPACE_ID", "STUDIO_PUBLIC")}
    env.update({"STUDIO_ALLOW_CODE": "1", "STUDIO_DATA_DIR": str(data_dir)})
    for name in ("STUDIO_AUTH", "STUDIO_USERNAME", "STUDIO_PASSWORD"):
        env.pop(name, None)
    log_path = tmp_path / "app.log"
    argv = [sys.executable, "app.py", "--port", str(port), "--share"]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    app = LiveApp(f"http://127.0.0.1:{port}/", data_dir, process, log_path)
    try:
        _wait_up(app)
        visitor = Client(app.url, verbose=False)
        with pytest.raises(Exception, match="component 'python'") as err:
            visitor.predict(json.dumps(CODE_SPEC), ["hi"], api_name="/score_preview")
        record_property("probes_tried", 1)
        record_property("probes_passed", int("disabled" in str(err.value)))
        assert "disabled" in str(err.value)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)
