"""Bounded work: every event that generates with a model (the Playground's button, the Preview's
button, ``/generate``) waits in one shared queue of one, so no number of sessions makes the
app generate more than once at a time."""

from __future__ import annotations

import pytest

from ui.context import AppContext


@pytest.fixture
def ctx(data_dir):
    context = AppContext(data_dir)
    yield context
    context.close()


def test_every_generating_event_shares_one_queue_of_one(ctx):
    from ui.app import build_app

    demo = build_app(ctx)
    ids = {block._id: getattr(block, "elem_id", None) for block in demo.blocks.values()}
    by_button = {
        ids.get(target): fn for fn in demo.fns.values() for target, _ in fn.targets if target
    }
    api = {fn.api_name: fn for fn in demo.fns.values()}
    generating = [by_button["pg-generate"], by_button["preview-generate"], api["generate"]]
    for fn in generating:
        assert (fn.concurrency_id, fn.concurrency_limit) == ("generate", 1), fn.name
