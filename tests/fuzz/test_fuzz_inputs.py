"""Fuzzing the web inputs: reward specs (dict and text), /score_preview, /start_run's parsing and
preflight, and the Preview tab's request. Every rejection is the product's error type with the
field named; nothing else escapes."""

from __future__ import annotations

import pytest
from fuzz_runner import fuzz
from fuzz_values import (
    HOSTILE_TEXT,
    JSON_LIKE,
    LEAVES,
    as_text,
    check_message,
    mutated,
)
from hypothesis import strategies as st

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.run.preflight import check_inputs
from rewards.errors import RewardSpecError
from rewards.spec import PRESETS, RewardSpec
from ui import api
from ui.api import ApiError
from ui.design.spec_io import parse_spec
from ui.preview.generate import PreviewError, PreviewRequest
from ui.shared.context import AppContext, DemoLimits

pytestmark = pytest.mark.reliability

BASE_SPEC = PRESETS["hand-tuned GRPO script"].to_dict()
BASE_SPEC["components"].append({"name": "rule", "weight": 0.5, "params": {"pattern": "x+"}})


@pytest.fixture
def ctx(data_dir, monkeypatch):
    monkeypatch.delenv("STUDIO_DATA_ROOTS", raising=False)
    monkeypatch.delenv("STUDIO_MODEL_ROOTS", raising=False)
    context = AppContext(data_dir, demo=DemoLimits.from_env({"SPACE_ID": "fuzz/studio"}))
    yield context
    context.close()


def test_fuzz_reward_spec_from_dict(record_property):
    def check(doc):
        try:
            RewardSpec.from_dict(doc)
        except RewardSpecError as exc:
            check_message(exc)
            assert exc.field or not isinstance(doc, dict) or "components" in str(exc), exc

    fuzz(record_property, check, mutated(BASE_SPEC))


def test_fuzz_reward_spec_text(record_property):
    texts = st.one_of(
        mutated(BASE_SPEC).map(as_text),
        st.text(max_size=200),
        HOSTILE_TEXT,
        st.builds(lambda n, c: c * n, st.sampled_from([60, 65, 100_000]), st.sampled_from("[{-")),
    )

    def check(text):
        try:
            parse_spec(text)
        except RewardSpecError as exc:
            check_message(exc)

    fuzz(record_property, check, texts)


def test_fuzz_score_preview(ctx, record_property):
    texts = st.lists(st.one_of(st.text(max_size=40), HOSTILE_TEXT, LEAVES), max_size=4)

    def check(spec, completions, prompts, answers):
        try:
            out = api.score_preview(ctx, spec, completions, prompts, answers)
        except ApiError as exc:
            check_message(exc)
            assert str(exc).split(":")[0].split(".")[0].split("[")[0] in (
                "spec",
                "completions",
                "prompts",
                "answers",
            ), exc
        else:
            assert len(out["totals"]) == len(completions)

    fuzz(
        record_property,
        check,
        st.one_of(mutated(BASE_SPEC), mutated(BASE_SPEC).map(as_text)),
        st.one_of(texts, LEAVES),
        st.one_of(st.none(), texts),
        st.one_of(st.none(), texts),
    )


def test_fuzz_start_run_parsing_and_preflight(ctx, record_property):
    """What /start_run does before it records a run: parse, demo caps, the web's input policy,
    preflight. (Launching 10,000 workers is not the point.)"""
    base = RunConfig.from_dict({"training": {"steps": 5, "eval_samples": 4}}).to_dict()

    def check(doc):
        try:
            config = api.parse_run_config(doc)
            ctx.demo.within_caps(config)
            ctx.input_policy.check_model(config.model)
            check_inputs(config, ctx.input_policy)
        except ApiError as exc:
            check_message(exc)
            assert str(exc).startswith("config"), exc
        except ConfigError as exc:
            check_message(exc)
            assert exc.field, exc

    fuzz(record_property, check, st.one_of(mutated(base), mutated(base).map(as_text), JSON_LIKE))


def test_fuzz_preview_request(record_property):
    numbers = st.one_of(LEAVES, st.integers(-5, 5000), st.floats(-5, 5000))

    def check(n, k, temperature, max_new, seed):
        request = PreviewRequest("default", "", {}, n, k, temperature, max_new, seed)
        try:
            request.check(64)
        except PreviewError as exc:
            check_message(exc)
            assert exc.field in (
                "num_prompts",
                "samples_per_prompt",
                "temperature",
                "max_new_tokens",
                "seed",
            )

    fuzz(record_property, check, numbers, numbers, numbers, numbers, numbers)
