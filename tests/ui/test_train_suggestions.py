"""The Train form applies each algorithm's suggestion when the user picks the algorithm or the
model (issue 43): the real handler of the built app, called as Gradio calls it."""

from __future__ import annotations

import pytest

from engine.config.run_config import RunConfig
from ui.train import form as train_form


def choice_handler(ctx, elem_id: str):
    """The function, inputs and outputs of the user's pick of the input ``elem_id``."""
    from ui.factory import build_app

    demo = build_app(ctx)
    for fn in demo.fns.values():
        for target, event in fn.targets:
            block = demo.blocks.get(target)
            if event == "input" and getattr(block, "elem_id", None) == elem_id:
                return fn.fn, fn.inputs, fn.outputs
    raise AssertionError(f"no input handler on {elem_id}")


def by_elem_id(updates: dict) -> dict:
    return {getattr(c, "elem_id", None): v for c, v in updates.items()}


@pytest.mark.parametrize("elem_id", ["train-algorithm", "train-model"])
def test_picking_the_algorithm_or_the_model_applies_that_algorithms_suggestion(ctx, elem_id):
    handler, inputs, _ = choice_handler(ctx, elem_id)
    assert [getattr(c, "elem_id", None) for c in inputs] == ["train-model", "train-algorithm"]
    ppo = by_elem_id(handler("smollm2-135m-instruct", "ppo"))
    assert ppo["train-ppo-kl-coef"] == 0.0 and ppo["train-ppo-value-warmup-steps"] > 0
    assert "train-grpo-beta" not in ppo  # another algorithm's section is left as it is
    rloo = by_elem_id(handler("smollm2-135m-instruct", "rloo"))
    assert rloo["train-rloo-normalize-advantages"] is True
    # Back to the default model: the same fields go back to the config's defaults.
    tiny = by_elem_id(handler("default", "ppo"))
    assert tiny["train-ppo-kl-coef"] == RunConfig().ppo.kl_coef
    assert tiny["train-ppo-value-warmup-steps"] == 0


def test_each_algorithms_suggestion_fills_a_valid_form():
    fields = train_form.form_fields()
    for algorithm in train_form.algorithms():
        for on_gpu in (True, False):
            values = {f.path: f.default for f in fields}
            values.update(train_form.suggested_values(fields, True, on_gpu, algorithm))
            inputs = train_form.TrainInputs(
                name="",
                algorithm=algorithm,
                model={"name_or_path": "smollm2-135m-instruct"},
                data={},
                reward=RunConfig().reward,
            )
            config = train_form.build_config(inputs, fields, values)
            assert config.algorithm == algorithm
