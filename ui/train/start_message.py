"""What the Start button says when the form cannot start a run: the field, why, and where it is.

"Fix the field marked below" sent people looking under the button when the field was above it,
inside a shut "Advanced" accordion, or on the Design tab (the reward). The message names the
field and the place; the field's own error line still shows the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.fields import ConfigError
from ui.shared.messages import escape
from ui.train.form import FormField

GENERAL = ""  # the error line under the Start button, for errors of no one field
SECTION_TITLES = {
    "generation": "Generation",
    "training": "Training",
    "tools": "Tools (agent runs)",
    "grpo": "GRPO",
    "rloo": "RLOO",
    "ppo": "PPO",
}
# Error lines of the form's top parts (not hyperparameter fields) and the heading they sit under.
PART_PLACES = {"name": "Run name", "model": "Model", "data": "Training data"}


def place_of(line: str, fields: Mapping[str, FormField]) -> str:
    """Where the error line ``line`` is, in the words of the page's headings."""
    if line in PART_PLACES:
        return f"under **{PART_PLACES[line]}** above"
    field = fields.get(line)
    if field is None:
        return "above"
    section = SECTION_TITLES.get(field.section, field.section)
    inside = "" if field.key else " › Advanced"
    return f"under **{section}{inside}** above"


def start_refusal(exc: ConfigError, line: str, fields: Mapping[str, FormField]) -> str:
    """The Start button's message for ``exc``, shown on the error line ``line``."""
    if line == "reward":
        return (
            "Not started: the reward has fields to fix on the **Design** tab "
            f"({escape(exc.reason)})."
        )
    if line == GENERAL:
        return f"Not started: {escape(exc)}"
    return f"Not started: {escape(exc)} — the field is marked {place_of(line, fields)}."


def not_ready_summary(exc: ConfigError) -> str:
    """The run summary while the form holds an error: the last valid summary would describe a
    run the form no longer asks for."""
    return f"**Not ready to start:** {escape(exc)}"
