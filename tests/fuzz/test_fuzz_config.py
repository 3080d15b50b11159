"""Fuzzing the run config's parsing: every hostile input is a ConfigError naming its field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fuzz_runner import fuzz
from fuzz_values import (
    HOSTILE_TEXT,
    JSON_LIKE,
    as_text,
    check_message,
    hostile_leaves,
    mutated,
    paths,
    planted,
)
from hypothesis import strategies as st

from engine.config.run_config import RunConfig
from engine.data.datasets import DatasetError, DataSpec
from engine.fields import ConfigError

BASE_CONFIG = RunConfig().to_dict()
BASE_DATA = {"source": "file", "path": "x.jsonl", "prompt_column": "q", "answer_column": "a"}

pytestmark = pytest.mark.reliability


def names_the_field(
    parse: Callable[[Any], object], error: type[ConfigError | DatasetError]
) -> Callable[[Any], None]:
    """A fuzz target: ``parse(doc)`` either accepts ``doc`` or raises ``error`` with a short
    message that names the field (unless ``doc`` is no mapping at all)."""

    def check(doc: Any) -> None:
        try:
            parse(doc)
        except error as exc:
            check_message(exc)
            assert exc.field or not isinstance(doc, dict), exc

    return check


def test_fuzz_run_config_from_dict(record_property):
    fuzz(record_property, names_the_field(RunConfig.from_dict, ConfigError), mutated(BASE_CONFIG))


def test_fuzz_run_config_from_yaml(record_property):
    texts = st.one_of(
        st.text(max_size=200),
        HOSTILE_TEXT,
        st.builds(
            lambda n, c: c * n,
            st.sampled_from([60, 65, 100_000]),
            st.sampled_from(["[", "{a: ", "- "]),
        ),
        JSON_LIKE.map(as_text),
        st.just("training:\n  steps: " + "9" * 5000),
    )

    def check(text):
        try:
            RunConfig.from_yaml(text)
        except ConfigError as exc:
            check_message(exc)

    fuzz(record_property, check, texts)


def test_fuzz_data_spec(record_property):
    fuzz(record_property, names_the_field(DataSpec.from_dict, DatasetError), mutated(BASE_DATA))


@pytest.mark.parametrize(
    ("parse", "error", "base"),
    [
        (RunConfig.from_dict, ConfigError, BASE_CONFIG),
        (DataSpec.from_dict, DatasetError, BASE_DATA),
    ],
    ids=["run_config", "data_spec"],
)
def test_every_hostile_leaf_at_every_field_is_refused_by_name(parse, error, base):
    """The sure part of the fuzzing: each fixed hostile value at each field of the document."""
    check = names_the_field(parse, error)
    for path in paths(base)[1:]:
        for value in hostile_leaves():
            check(planted(base, path, value))
