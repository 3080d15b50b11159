"""The built-in tools and the ``tools:`` config section (issue 24, phase 1)."""

from __future__ import annotations

import json

import pytest

from engine.config.run_config import RunConfig
from engine.data.datasets import DataSpec, load_rows
from engine.fields import ConfigError
from engine.run.preflight import check_inputs
from engine.tools.calculator import MAX_EXPRESSION_CHARS, calculator
from engine.tools.errors import ToolError
from engine.tools.lookup import context_entries, lookup_in
from engine.tools.toolbox import toolbox_class
from engine.tools.units import convert_units


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("17*3", "51"),
        ("(2+3)**2", "25"),
        ("7/2", "3.5"),
        ("1/3", "0.333333333333"),
        ("-4 + 10 // 3", "-1"),
        ("2**-2", "0.25"),
        ("123456789*987654321", "121932631112635269"),
        (" 10 % 4 ", "2"),
    ],
)
def test_the_calculator_computes_arithmetic(expression, value):
    assert calculator(expression) == value


@pytest.mark.reliability
@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("9**9**9", "exponent 387420489 is larger than 1000"),
        ("10**200", "longer than 100 digits"),
        ("(10**60)*(10**60)", "longer than 100 digits"),
        ("2.0**5000", "exponent 5000"),
        ("__import__('os').system('ls')", "not Call"),
        ("x + 1", "not Name"),
        ("[1, 2]", "not List"),
        ("1 if 1 else 2", "not IfExp"),
        ("1 << 2", "operator LShift is not allowed"),
        ("1/0", "division by zero"),
        ("0**-1", "zero to a negative power"),
        ("(-8)**0.5", "fractional power"),
        ("1e308*10", "longer than 100 digits"),
        ("17*", "not arithmetic"),
        ("-" * 100 + "1", "nested deeper than 32"),
        ("(1+" * 40 + "1" + ")" * 40, "nested deeper than 32"),
        ("(" * 5000 + "1" + ")" * 5000, f"at most {MAX_EXPRESSION_CHARS}"),
    ],
)
def test_the_calculator_refuses_what_is_not_bounded_arithmetic(expression, why):
    with pytest.raises(ToolError, match=why.replace("(", r"\(").replace("*", r"\*")):
        calculator(expression)


@pytest.mark.reliability
def test_an_exponent_tower_is_refused_without_being_computed():
    # Refused from the exponent's size: the tower's value is never computed.
    with pytest.raises(ToolError, match="is larger than 1000"):
        calculator("9**9**9**9")


def test_the_unit_converter():
    assert convert_units(5, "km", "m") == "5000 m"
    assert convert_units(100, "C", "F") == "212 F"
    assert convert_units(1, "lb", "g") == "453.59237 g"
    with pytest.raises(ToolError, match=r"cannot convert kg \(mass\) to m \(length\)"):
        convert_units(1, "kg", "m")
    with pytest.raises(ToolError, match="unknown unit 'parsec'"):
        convert_units(1, "parsec", "m")
    with pytest.raises(ToolError, match="value must be a number"):
        convert_units("5", "km", "m")


def test_lookup_reads_only_the_rows_own_context():
    entries = context_entries("Capital: Paris\npopulation:  2.1 million\nno colon here")
    assert lookup_in(entries, " capital ") == "Paris"
    assert lookup_in(context_entries({"Height": 330}), "height") == "330"
    with pytest.raises(ToolError, match="no entry 'area'; known keys: capital, population"):
        lookup_in(entries, "area")
    with pytest.raises(ToolError, match="no context"):
        lookup_in(context_entries(None), "capital")


def test_the_toolbox_offers_only_the_configured_tools_and_counts_calls_per_rollout():
    box = toolbox_class(["calculator", "lookup"], max_calls=2)()
    assert not hasattr(box, "convert_units")
    box.reset(prompt=[], context="speed: 12")
    assert box.lookup("speed") == "12"
    assert box.calculator("12*3") == "36"
    with pytest.raises(ToolError, match="budget of 2 tool calls is spent"):
        box.calculator("1+1")
    box.reset(prompt=[], context="speed: 7")  # the next rollout: a fresh budget and context
    assert box.lookup("speed") == "7"


@pytest.mark.reliability
def test_a_ten_megabyte_argument_ends_only_that_call():
    box = toolbox_class(["calculator"], max_calls=4)()
    box.reset()
    with pytest.raises(ToolError, match="10,000,000 characters; at most 1,000"):
        box.calculator("1" * 10_000_000)
    assert box.calculator("2+2") == "4"  # the rollout goes on


def test_tool_schemas_come_from_the_methods():
    from transformers.utils import get_json_schema

    box = toolbox_class(["convert_units"], max_calls=1)()
    schema = get_json_schema(box.convert_units)["function"]
    assert schema["name"] == "convert_units"
    assert schema["parameters"]["required"] == ["value", "from_unit", "to_unit"]
    assert schema["parameters"]["properties"]["value"]["type"] == "number"


def test_the_tools_section_round_trips_and_names_bad_fields(monkeypatch):
    monkeypatch.delenv("STUDIO_ALLOW_CODE", raising=False)  # own tool modules: refused
    config = RunConfig.from_dict({"tools": {"builtin": ["calculator"], "max_tool_calls": 3}})
    assert RunConfig.from_yaml(config.to_yaml()).tools == config.tools
    assert not RunConfig().tools.enabled
    cases = {
        "tools.builtin[0]": {"tools": {"builtin": ["calc"]}},
        "tools.max_tool_calls": {"tools": {"max_tool_calls": 0}},
        "tools.python_module": {"tools": {"python_module": "my_tools.py"}},
        "tools.builtin": {"tools": {"builtin": ["lookup", "lookup"]}},
    }
    for field, data in cases.items():
        with pytest.raises(ConfigError) as err:
            RunConfig.from_dict(data)
        assert err.value.field == field


@pytest.mark.parametrize("algorithm", ["rloo", "ppo"])
def test_rloo_and_ppo_with_tools_are_refused_by_name(algorithm):
    with pytest.raises(ConfigError, match=f"{algorithm} cannot call tools; tools run with grpo"):
        RunConfig.from_dict({"algorithm": algorithm, "tools": {"builtin": ["calculator"]}})


def test_rows_carry_the_lookup_column_as_their_context(tmp_path):
    data = tmp_path / "cities.jsonl"
    rows = [
        {"q": f"Population of city {i}?", "a": str(i), "facts": f"population: {i}"}
        for i in range(5)
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    spec = {"source": "file", "path": str(data), "prompt_column": "q", "answer_column": "a"}
    loaded = load_rows(DataSpec(**spec), context_column="facts")
    assert loaded and all(r["context"] == f"population: {r['answer']}" for r in loaded)
    assert "context" not in load_rows(DataSpec(**spec))[0]

    config = RunConfig.from_dict(
        {"data": spec, "tools": {"builtin": ["lookup"], "context_column": "facts"}}
    )
    check_inputs(config)
    config.tools.context_column = "notes"
    with pytest.raises(ConfigError) as err:
        check_inputs(config)
    assert err.value.field == "tools.context_column"
    assert "'notes'" in err.value.reason and "facts" in err.value.reason
