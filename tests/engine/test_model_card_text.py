"""The model card shows the user's text as text: a run name cannot add an image, a link, an HTML
tag or a heading to a Hub page, and an uploaded data file shows by its
name, not the server's folders."""

from __future__ import annotations

import re

from engine.config.run_config import RunConfig
from engine.exports.model_card import as_text, model_card

HOSTILE = "![p](http://127.0.0.1:9/p.png) <img src=x onerror=alert(1)> [a](http://x) | # h"


def card_of(config: RunConfig) -> str:
    return model_card(
        config,
        run_id="grpo-1",
        model_label="final model",
        trained_steps=2,
        heldout={},
        export_format="hf",
    )


def test_a_hostile_run_name_shows_as_one_line_of_text():
    config = RunConfig.from_dict({"name": HOSTILE})
    card = card_of(config)
    heading = card.split("---\n")[2].splitlines()[0]
    assert heading.startswith("# ") and heading.count("#") == 2  # its own and the escaped one
    for line in card.splitlines():
        assert not re.search(r"(?<!\\)(!\[|\]\(|<img|<[a-z])", line), line
    assert re.sub(r"\\(.)", r"\1", as_text(HOSTILE)) == HOSTILE  # renders as what was typed


def test_an_old_runs_name_with_a_line_break_stays_one_heading():
    config = RunConfig.from_dict({})
    object.__setattr__(config, "name", "run\n\n---\nlibrary_name: evil\n\u202e")  # a stored row
    lines = card_of(config).splitlines()
    assert lines.count("---") == 2 and "library_name: evil" not in lines  # front matter as made
    assert [line for line in lines if line.startswith("# ")] == [lines[lines.index("---", 1) + 1]]


def test_an_uploaded_file_shows_by_its_name():
    stored = "/srv/studio/uploads/" + "a" * 24 + "/" + "b" * 32 + ".parquet"
    config = RunConfig.from_dict({"data": {"source": "file", "path": stored}})
    card = card_of(config)
    assert "b" * 32 + "\\.parquet" in card and "/srv/" not in card and "uploads" not in card
