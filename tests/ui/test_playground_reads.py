"""The Playground reads a run's config and data once per run (again when its recorded config
changes), and still checks the run's owner on every request."""

from __future__ import annotations

import json

import pytest

from engine.config.run_config import RunConfig
from engine.data.datasets import DataSpec
from storage import runs as run_store
from ui.access.identity import LOCAL_VIEWER, Viewer
from ui.playground.reads import RunReadCache
from ui.playground.replies import PlaygroundCache, PlaygroundError, run_reads

STRANGER = Viewer("hf:mallory", "mallory")


def write_rows(path, questions):
    path.write_text("\n".join(json.dumps({"prompt": q, "answer": "1"}) for q in questions))


@pytest.fixture
def run(ctx, data_dir):
    """A run of the local viewer over an uploaded JSONL file (no training needed to read it)."""
    uploads = ctx.input_policy.uploads
    uploads.mkdir(parents=True, exist_ok=True)
    data = uploads / "rows.jsonl"
    write_rows(data, ["first?", "second?"])
    run_dir = data_dir / "runs" / "r1"
    run_dir.mkdir(parents=True)
    config = RunConfig(data=DataSpec(source="file", path=str(data), split="all"))
    run_store.create_run(
        ctx.db,
        algorithm="grpo",
        config=config.to_dict(),
        run_id="r1",
        output_dir=run_dir,
        owner=LOCAL_VIEWER.owner,
    )
    return data, run_dir


def questions(reads):
    return [row["prompt"][-1]["content"] for row in reads.rows]


def test_a_run_is_read_once_until_its_config_changes(ctx, run):
    data, _ = run
    cache = PlaygroundCache()
    first = run_reads(ctx, cache, LOCAL_VIEWER, "r1")
    assert questions(first) == ["first?", "second?"]
    write_rows(data, ["changed?"])  # the config still names the same file: not read again
    assert run_reads(ctx, cache, LOCAL_VIEWER, "r1") is first
    recorded = run_store.get_run(ctx.db, "r1").config
    run_store.update_run(ctx.db, "r1", config={**recorded, "name": "renamed"})
    assert questions(run_reads(ctx, cache, LOCAL_VIEWER, "r1")) == ["changed?"]


def test_the_owner_is_checked_on_every_request(ctx, run):
    cache = PlaygroundCache()
    run_reads(ctx, cache, LOCAL_VIEWER, "r1")
    with pytest.raises(PlaygroundError, match="No run with id"):
        run_reads(ctx, cache, STRANGER, "r1")


def test_unreadable_data_is_not_kept_and_the_cache_is_bounded(ctx, run):
    data, run_dir = run
    data.write_text("not json")
    cache = PlaygroundCache(runs=RunReadCache(keep=1))
    with pytest.raises(PlaygroundError, match=r"^data: "):
        run_reads(ctx, cache, LOCAL_VIEWER, "r1")
    write_rows(data, ["fixed?"])
    assert questions(run_reads(ctx, cache, LOCAL_VIEWER, "r1")) == ["fixed?"]
    other = run_dir.parent / "r2"
    other.mkdir()
    cache.runs.get(ctx, "r2", other, run_store.get_run(ctx.db, "r1").config)
    assert len(cache.runs._reads) == 1


def test_the_playground_and_engine_generate_take_the_same_system_prompt(ctx, run):
    """A file of chat rows with their own system message: both read its first row's."""
    from engine.model_commands import _data_system_prompt

    data, _ = run
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+0?"}]
    data.write_text(json.dumps({"prompt": chat, "answer": "1"}))
    reads = run_reads(ctx, PlaygroundCache(), LOCAL_VIEWER, "r1")
    assert reads.system == "Be brief." == _data_system_prompt(reads.config)
    builtin = RunConfig()
    assert _data_system_prompt(builtin) == builtin_system_prompt()


def builtin_system_prompt():
    from engine.tasks import builtin_task

    return builtin_task(0).train_rows(1)[0]["prompt"][0]["content"]
