"""A reward edit re-scores the Preview's cache once: the table and the clicked sample's trace
share one scoring, through the handlers Gradio runs on a change of the Design tab's spec."""

import gradio as gr
import pytest

from rewards.spec import ComponentSpec, RewardSpec
from ui.design.tab import DesignHandles
from ui.preview.cache import PreviewCache
from ui.preview.tab import build_preview, sample_trace

RIGHT = "<think>2+3: 5</think><answer>5</answer>"
WRONG = "<think>2+3: 6</think><answer>6</answer>"


class CountingCache(PreviewCache):
    """A real cache that counts its whole-cache scorings."""

    rescored = 0

    def rescore(self, spec):
        CountingCache.rescored += 1
        return super().rescore(spec)


@pytest.fixture
def app(ctx):
    with gr.Blocks() as demo:
        design = DesignHandles(spec_state=gr.State(None), form=None)
        build_preview(ctx, design)
    return demo, design


def spec_change_handlers(demo, design):
    return [f for f in demo.fns.values() if (design.spec_state._id, "change") in f.targets]


def run_handlers(handlers, values: dict) -> dict:
    """Run each handler as Gradio would on the event; returns output component -> value."""
    out = {}
    for f in handlers:
        result = f.fn(*(values[c] for c in f.inputs))
        out.update(zip(f.outputs, result, strict=True))
    return out


@pytest.mark.parametrize("selected", [0, None])
def test_a_reward_edit_scores_the_cache_once_and_shows_the_selected_trace(app, selected):
    demo, design = app
    cache = CountingCache(
        prompts=["What is 2+3?"] * 2,
        completions=[RIGHT, WRONG],
        answers=["5", "5"],
        completion_ids=[[1], [2]],
        truncated=[False, False],
        groups=[0, 0],
    )
    spec = RewardSpec([ComponentSpec("correctness", 1.0), ComponentSpec("format", 0.5)])
    handlers = spec_change_handlers(demo, design)
    (cache_state,) = {c for f in handlers for c in f.inputs if isinstance(c.value, PreviewCache)}
    (selected_state,) = {
        c for f in handlers for c in f.inputs if isinstance(c, gr.State) and c.value is None
    } - {design.spec_state}
    values = {cache_state: cache, design.spec_state: spec, selected_state: selected}
    CountingCache.rescored = 0
    out = run_handlers(handlers, values)
    assert CountingCache.rescored == 1
    table = next(v for v in out.values() if isinstance(v, gr.Dataframe))
    assert [row[-1] for row in table.value["data"]] == [1.5, 0.5]
    traces = [v for v in out.values() if isinstance(v, list)]
    if selected is None:  # no sample clicked: the trace is left as it is
        assert traces == []
    else:
        expected = sample_trace(cache.rescore(spec), selected)
        assert expected in traces
