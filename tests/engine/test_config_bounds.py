"""Every numeric RunConfig knob declares its range once, in its field metadata, and that one
declaration is what refuses a value, what the error names and what the form's help shows.

Generated over all fields of all config sections, so a new field without a declared range, or a
range still checked by hand somewhere else, fails here.
"""

import dataclasses
import math
import typing

import pytest

from engine.config.run_config import RunConfig
from engine.data.datasets import DatasetError, DataSpec
from engine.fields import ConfigError, field_help, from_dict
from engine.models.specs import LoraSpec
from rewards.params import Bounds, exact_number
from rewards.spec import RewardSpec
from ui.train import form as train_form


def _sections() -> dict[str, type]:
    hints = typing.get_type_hints(RunConfig)
    return {
        f.name: hints[f.name]
        for f in dataclasses.fields(RunConfig)
        if dataclasses.is_dataclass(hints[f.name])
        and hints[f.name].__module__
        in ("engine.config.run_config", "engine.config.training", "engine.config.algorithms")
    }


def _scalar(tp: typing.Any) -> typing.Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if args else tp


def _numeric_fields() -> list[tuple[str, type, dataclasses.Field, type]]:
    out = []
    for section, cls in _sections().items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            tp = _scalar(hints[f.name])
            if tp in (int, float):
                out.append((f"{section}.{f.name}", cls, f, tp))
    return out


NUMERIC = _numeric_fields()
# Fields whose in-range values need another field of their section set (a rule over both).
COMPANIONS = {"training.num_machines": {"main_address": "10.0.0.5"}}
IDS = [path for path, *_ in NUMERIC]


def _every_numeric_path(cls: type, prefix: str = "") -> set[str]:
    """Dotted paths of every int/float field of ``cls`` and the config dataclasses it nests."""
    out = set()
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, path = _scalar(hints[f.name]), f"{prefix}{f.name}"
        if tp in (int, float) and "bounds" not in f.metadata:
            out.add(path)
        elif dataclasses.is_dataclass(tp) and tp is not RewardSpec:  # its params: ParamSpecs
            out |= _every_numeric_path(tp, f"{path}.")
    return out


def test_no_numeric_field_goes_without_a_declared_range():
    # model.lora.* and data.* too: their specs live outside the config module.
    assert _every_numeric_path(RunConfig) == set()


def test_the_config_sections_hold_numeric_knobs():
    assert set(_sections()) >= {"generation", "training", "grpo", "rloo", "ppo"}
    assert len(NUMERIC) > 30


def _outside(bounds: Bounds, lo: float, tp: type) -> list[float]:
    """Values just outside the range on each bounded side."""
    values = []
    if lo is not None:
        if bounds.lo_open:
            values.append(lo)
        else:
            values.append(lo - 1 if tp is int else math.nextafter(lo, -math.inf))
    if bounds.hi is not None:
        if bounds.hi_open:
            values.append(bounds.hi)
        else:
            values.append(bounds.hi + 1 if tp is int else math.nextafter(bounds.hi, math.inf))
    return values


def _inside(bounds: Bounds, lo: float, tp: type) -> list[float]:
    """The bounds themselves, or just inside an open one."""
    low = lo if not bounds.lo_open else (lo + 1 if tp is int else math.nextafter(lo, math.inf))
    high = bounds.hi
    if bounds.hi_open:
        high = high - 1 if tp is int else math.nextafter(high, -math.inf)
    return [int(v) if tp is int else v for v in (low, high)]


@pytest.mark.parametrize(("path", "cls", "f", "tp"), NUMERIC, ids=IDS)
def test_each_numeric_field_declares_its_range_and_refuses_values_just_outside(path, cls, f, tp):
    bounds = f.metadata.get("bounds")
    assert isinstance(bounds, Bounds), f"{path} declares no range in its metadata"
    assert bounds.hi is not None, f"{path} has no upper bound"
    section = path.split(".")[0]
    default = cls()
    lo = getattr(default, bounds.lo_field) if bounds.lo_field else bounds.lo
    assert lo is not None, f"{path} has no lower bound"
    allowed = bounds.describe(lo)
    # The form and the exported config show the declared range (``[epsilon, 1]`` for a bound
    # that is another field); the help text does not restate it by hand.
    assert bounds.describe() in field_help(f)
    assert bounds.describe() not in f.metadata["help"], f"{path} repeats its range in its help"
    for value in _outside(bounds, lo, tp):
        with pytest.raises(ConfigError) as info:
            from_dict(cls, {**COMPANIONS.get(path, {}), f.name: value}, section)
        assert info.value.field == path
        assert f"must be in {allowed}" in str(info.value), str(info.value)
    # The bounds themselves are accepted (an open bound only just inside it).
    for value in _inside(bounds, lo, tp):
        given = {**COMPANIONS.get(path, {}), f.name: value}
        assert getattr(from_dict(cls, given, section), f.name) == value


def _spec_fields() -> list[tuple[str, dataclasses.Field, type]]:
    """Numeric fields of the specs RunConfig nests from other modules: ``model.lora.r``,
    ``data.heldout_share``..."""
    specs = {"model.lora": LoraSpec, "data": DataSpec}
    out = []
    for prefix, cls in specs.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            tp = _scalar(hints[f.name])
            if tp in (int, float):
                out.append((f"{prefix}.{f.name}", f, tp))
    return out


def _config_with(path: str, value: float) -> dict:
    data = RunConfig().to_dict()
    data["model"]["lora"] = {}
    *parents, name = path.split(".")
    holder = data
    for part in parents:
        holder = holder[part]
    holder[name] = value
    return data


SPEC_FIELDS = _spec_fields()


@pytest.mark.parametrize(("path", "f", "tp"), SPEC_FIELDS, ids=[p for p, *_ in SPEC_FIELDS])
def test_nested_spec_fields_declare_their_range_and_refuse_values_just_outside(path, f, tp):
    bounds = f.metadata.get("bounds")
    assert isinstance(bounds, Bounds), f"{path} declares no range in its metadata"
    assert bounds.lo is not None and bounds.hi is not None, f"{path} is unbounded on a side"
    assert bounds.describe() in field_help(f)
    assert bounds.describe() not in f.metadata["help"], f"{path} repeats its range in its help"
    for value in _outside(bounds, bounds.lo, tp):
        with pytest.raises(ConfigError) as info:
            RunConfig.from_dict(_config_with(path, value))
        assert info.value.field == path
        shown = exact_number(value)
        assert str(info.value) == f"{path}: must be in {bounds.describe()}, got {shown}"
    for value in _inside(bounds, bounds.lo, tp):
        config = RunConfig.from_dict(_config_with(path, value))
        holder = config.model.lora if path.startswith("model.lora.") else config.data
        assert getattr(holder, f.name) == value


def test_half_open_ranges_read_and_check_as_written():
    # A dropout or a held-out share of exactly 1 would drop everything: [0, 1) refuses it.
    assert SPEC_FIELDS and {p for p, *_ in SPEC_FIELDS} >= {"model.lora.dropout", "data.seed"}
    share = Bounds(0, 1, hi_open=True)
    assert share.describe() == "[0, 1)"
    assert share.problem(1.0) == "must be in [0, 1), got 1"
    assert share.problem(0.0) is None and share.problem(math.nextafter(1.0, 0)) is None
    with pytest.raises(DatasetError) as info:
        DataSpec(heldout_share=1.0)
    assert info.value.field == "heldout_share"
    assert str(info.value) == "heldout_share: must be in [0, 1), got 1"
    with pytest.raises(ConfigError, match=r"^lora\.dropout: must be in \[0, 1\), got 1$"):
        LoraSpec(dropout=1.0)
    # Hostile sizes are refused by the range, not by an overflow in the message.
    with pytest.raises(ConfigError, match=r"^lora\.r: must be in \[1, 8192\], got an integer"):
        LoraSpec(r=10**400)


@pytest.mark.parametrize("field", train_form.form_fields(), ids=lambda f: f.path)
def test_the_train_form_shows_each_declared_range(field):
    section = typing.get_type_hints(RunConfig)[field.section]
    f = {x.name: x for x in dataclasses.fields(section)}[field.name]
    bounds = f.metadata.get("bounds")
    assert field.help == field_help(f)
    if bounds is not None:
        assert bounds.describe() in field.help


def test_a_range_error_names_the_field_through_the_whole_config():
    data = RunConfig().to_dict()
    data["ppo"]["vf_coef"] = 100.5
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict(data)
    assert info.value.field == "ppo.vf_coef"
    assert str(info.value) == "ppo.vf_coef: must be in [0, 100], got 100.5"
