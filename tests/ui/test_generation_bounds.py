"""Bounded work when generating: every event that generates with a model (the Playground's
button, the Preview's button, ``/generate``) waits in one shared queue of one, so no number of
sessions makes the app generate more than once at a time; and the Playground's "another model"
side on a public demo reports the model-size cap as its own error naming the model."""

from __future__ import annotations

import pytest

from ui.playground.replies import PlaygroundCache, PlaygroundError, Side, load_side
from ui.preview.generate import CUSTOM
from ui.shared.context import AppContext, DemoLimits


@pytest.fixture
def demo_ctx(data_dir):
    demo = DemoLimits.from_env({"STUDIO_DEMO_MAX_MODEL_PARAMS": "1000"})
    context = AppContext(data_dir, demo=demo)
    yield context
    context.close()


def test_every_generating_event_shares_one_queue_of_one(ctx):
    from ui.factory import build_app

    demo = build_app(ctx)
    ids = {block._id: getattr(block, "elem_id", None) for block in demo.blocks.values()}
    by_button = {
        ids.get(target): fn for fn in demo.fns.values() for target, _ in fn.targets if target
    }
    api = {fn.api_name: fn for fn in demo.fns.values()}
    generating = [by_button["pg-generate"], by_button["preview-generate"], api["generate"]]
    for fn in generating:
        assert (fn.concurrency_id, fn.concurrency_limit) == ("generate", 1), fn.name


def test_a_model_over_the_demo_cap_is_refused_naming_the_model(demo_ctx):
    side = Side(CUSTOM, "someone/a-model-whose-size-is-unknown")
    with pytest.raises(PlaygroundError) as err:
        load_side(demo_ctx, PlaygroundCache(), None, side)
    assert str(err.value).startswith("model: this demo loads models up to 1,000 parameters")
