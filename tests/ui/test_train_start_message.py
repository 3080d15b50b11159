"""The Start button's refusal names the field, why, and where on the page it is."""

from engine.fields import ConfigError
from ui.train import form as train_form
from ui.train.start_message import GENERAL, not_ready_summary, start_refusal

FIELDS = {f.path: f for f in train_form.form_fields()}


def shown(markdown: str) -> str:
    """The text as the page shows it: Markdown's backslash escapes (messages.escape) undone."""
    return markdown.replace("\\", "")


def test_a_key_field_is_placed_in_its_section_and_another_under_advanced():
    steps = ConfigError("training.steps", "must be an integer in [1, 1e+06], got 0")
    assert shown(start_refusal(steps, "training.steps", FIELDS)) == (
        "Not started: training.steps: must be an integer in [1, 1e+06], got 0 — the field is "
        "marked under **Training** above."
    )
    advanced = next(p for p, f in FIELDS.items() if f.section == "training" and not f.key)
    message = start_refusal(ConfigError(advanced, "bad"), advanced, FIELDS)
    assert message.endswith("under **Training › Advanced** above.")


def test_reward_data_and_general_errors_point_where_they_show():
    reward = ConfigError("reward", "the reward in the Design tab has fields to fix")
    assert "on the **Design** tab" in start_refusal(reward, "reward", FIELDS)
    data = ConfigError("data.path", "dataset file 'broken.csv' is <not> readable")
    assert shown(start_refusal(data, "data", FIELDS)) == (
        "Not started: data.path: dataset file 'broken.csv' is &lt;not&gt; readable — the field "
        "is marked under **Training data** above."
    )
    assert start_refusal(ConfigError("", "no GPU"), GENERAL, FIELDS) == "Not started: no GPU"
    assert shown(not_ready_summary(ConfigError("training.steps", "bad"))) == (
        "**Not ready to start:** training.steps: bad"
    )
