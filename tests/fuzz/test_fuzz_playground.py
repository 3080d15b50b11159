"""Fuzzing the Playground's and /generate's inputs: sampling settings and prompts. Every
rejection is the product's error with the field named; nothing else escapes."""

from __future__ import annotations

import dataclasses

import pytest
from fuzz_runner import fuzz
from fuzz_values import FUZZ_SETTINGS, HOSTILE_TEXT, JSON_LIKE, LEAVES, MAX_EXAMPLES, check_message
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from engine.fields import ConfigError
from engine.generation.playground import GenerateError, check_prompt, check_reply_settings
from engine.generation.settings import SamplingSettings
from ui.api import ApiError, sampling_settings

pytestmark = pytest.mark.reliability

FIELDS = [f.name for f in dataclasses.fields(SamplingSettings)]


def test_fuzz_sampling_settings(record_property):
    numbers = st.one_of(LEAVES, st.integers(-5, 5000), st.floats(-5, 5000))

    def check(temperature, top_p, max_new, samples, seed):
        try:  # the type checks its ranges when made, the request's caps after
            settings = SamplingSettings(temperature, top_p, max_new, samples, seed)
            check_reply_settings(settings, max_samples=4, max_tokens=512)
        except ConfigError as exc:
            check_message(exc)
            assert exc.field in FIELDS

    # Five numbers into a range check: a fifth of the cases still draws every leaf many times.
    fewer = hypothesis_settings(FUZZ_SETTINGS, max_examples=max(1, MAX_EXAMPLES // 5))
    fuzz(record_property, check, numbers, numbers, numbers, numbers, numbers, fuzz_settings=fewer)


def test_fuzz_generate_settings_and_prompt(record_property):
    keys = st.one_of(st.sampled_from(FIELDS), HOSTILE_TEXT)
    settings = st.one_of(JSON_LIKE, st.dictionaries(keys, st.one_of(LEAVES, JSON_LIKE)))

    def check(raw, prompt):
        try:
            sampling_settings(raw)
        except ApiError as exc:
            check_message(exc)
            assert str(exc).startswith("settings")
        try:
            check_prompt(prompt)
        except GenerateError as exc:
            check_message(exc)
            assert exc.field == "prompt"

    # Nested JSON is costly to draw: a fifth of the cases keeps this under half a minute.
    fewer = hypothesis_settings(FUZZ_SETTINGS, max_examples=max(1, MAX_EXAMPLES // 5))
    fuzz(record_property, check, settings, st.one_of(HOSTILE_TEXT, JSON_LIKE), fuzz_settings=fewer)
