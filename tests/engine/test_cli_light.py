"""``python -m engine runs|stop|delete|export-config`` never import torch, transformers or trl,
and ``train`` does not before its config is known to be usable.

Each command runs in a fresh interpreter against a real SQLite data dir; a small harness runs
the CLI's ``main`` and then reports which heavy libraries ``sys.modules`` holds.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.config.run_config import RunConfig
from engine.runtime import layout as run_layout
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.source_imports import ROOT

HEAVY = ("torch", "transformers", "trl")
HARNESS = f"""
import json, sys
from engine.cli import main
code = main(sys.argv[1:])
print(json.dumps({{"code": code, "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""


def run_cli(*args: object) -> tuple[str, dict]:
    """Run the CLI with ``args`` in a fresh interpreter: its output and the harness's report."""
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    *output, report = done.stdout.strip().splitlines()
    return "\n".join(output), json.loads(report)


@pytest.fixture
def queued_run(data_dir):
    """A data dir whose database holds one queued run, with its run folder and config."""
    folder = run_layout.run_dir(data_dir, "grpo-light-1")
    folder.mkdir(parents=True)
    run_layout.config_path(folder).write_text("algorithm: grpo\n", encoding="utf-8")
    with Database(db_path(data_dir)) as db:
        run_store.create_run(
            db,
            run_id="grpo-light-1",
            name="light listing",
            algorithm="grpo",
            config={"algorithm": "grpo"},
            output_dir=str(folder),
            total_steps=20,
        )
    return data_dir


def test_runs_lists_a_stored_run_without_torch(queued_run):
    output, report = run_cli("runs", "--data-dir", queued_run)
    assert report == {"code": 0, "heavy": []}
    assert "grpo-light-1" in output and "queued" in output and "light listing" in output


def test_stop_and_delete_act_on_a_stored_run_without_torch(queued_run):
    output, report = run_cli("stop", "grpo-light-1", "--data-dir", queued_run)
    assert report == {"code": 0, "heavy": []} and "stop: grpo-light-1" in output
    with Database(db_path(queued_run)) as db:
        assert run_store.get_run(db, "grpo-light-1").status == RunStatus.STOPPED

    output, report = run_cli("delete", "grpo-light-1", "--data-dir", queued_run)
    assert report == {"code": 0, "heavy": []} and "delete: grpo-light-1" in output
    with Database(db_path(queued_run)) as db:
        assert run_store.get_run(db, "grpo-light-1") is None
    assert not run_layout.run_dir(queued_run, "grpo-light-1").exists()


def test_export_config_writes_the_default_config_without_torch(tmp_path):
    out = tmp_path / "run.yaml"
    output, report = run_cli("export-config", out)
    assert report == {"code": 0, "heavy": []} and f"wrote {out}" in output
    assert "algorithm:" in out.read_text(encoding="utf-8")


def test_export_config_for_a_pretrained_model_follows_the_device_without_torch(tmp_path):
    configs = {}
    for device in ("gpu", "cpu"):
        out = tmp_path / f"{device}.yaml"
        _, report = run_cli(
            "export-config", out, "--model", "smollm2-135m-instruct", "--device", device
        )
        assert report == {"code": 0, "heavy": []}
        configs[device] = RunConfig.load(out)
    gpu, cpu = configs["gpu"], configs["cpu"]
    assert gpu.training.prompts_per_step == 32 and gpu.training.micro_batch_size is None
    assert cpu.training.prompts_per_step == 2 and cpu.training.micro_batch_size == 16
    assert (gpu.model.lora.last_layers, cpu.model.lora.last_layers) == (0, 8)
    for config in (gpu, cpu):
        assert config.model.lora is not None
        assert config.reward.components[1].params["mode"] == "soft"
        assert "<think>" in config.data.system_prompt


def test_train_refuses_a_config_it_cannot_use_before_importing_torch(data_dir, tmp_path):
    """An empty or misspelt config fails in about a second, not after the trainer's imports."""
    for text in ("", "training:\n  stepz: 3\n"):
        path = tmp_path / "bad.yaml"
        path.write_text(text, encoding="utf-8")
        _, report = run_cli("train", path, "--data-dir", data_dir)
        assert report == {"code": 2, "heavy": []}


def test_export_config_for_the_agent_task_refuses_another_model(tmp_path):
    out = tmp_path / "agent.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "export-config", out, "--task", "agent", "--model", "x/y"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and not out.exists()  # nothing written that ignores --model
    assert "--task agent trains the shipped agent model" in done.stderr and "'x/y'" in done.stderr
    _, report = run_cli("export-config", out, "--task", "agent", "--model", "agent")
    assert report == {"code": 0, "heavy": []}
    assert RunConfig.load(out).model.name_or_path == "agent"
